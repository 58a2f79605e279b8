"""Benchmark: load_history + event_lifecycles vs a plain parse of the same file, side by side.

    python tools/bench_analysis.py [--observations 1000000] [--rounds 3] [--pandas-json]
    python tools/bench_analysis.py --change-only --busier 40 [--observations 3000000]

Generates a fleet-mix history with the simulator's offline mode (12 VMs, 10 s polls, as
many days as it takes; --change-only writes it as the event relay does, a line per change,
from that many polls, with fleet-mix's rates times --busier so that there are changes to
read), then times, alternating in each round:
  * parse:  pyarrow's JSON reader with the schema given -> pandas DataFrame (the fastest
            plain "file into a DataFrame" there is; without the schema Arrow cannot even
            type the empty `events` arrays);
  * arrow:  the same reader, stopping at the Arrow table (a stricter floor, for reference);
  * ours:   event_analysis.load_history + event_lifecycles (bad-line accounting,
            flattening, time parsing, sorting, de-duplication, lifecycles);
  * pandas.read_json(lines=True) with --pandas-json (slow; the ujson path).
Reports each median and the ratio ours / parse. The target is a ratio of at most 4.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
import pyarrow.json as pj  # noqa: E402

import event_analysis as ea  # noqa: E402
from event_analysis.loading.schema import LINE  # noqa: E402
from imds_simulator import scenario as sc  # noqa: E402
from imds_simulator.engine import Engine, EngineOptions  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet  # noqa: E402
from imds_simulator.offline import GenerateOptions, generate, open_output  # noqa: E402
from tools.soak import busier_fleet_mix  # noqa: E402

VMS, POLL_S = 12, 10.0


def make_history(path: Path, polls: int, change_only: bool = False, busier: float = 1.0) -> int:
    """A history of `polls` polls (lines written: all of them, or the changes only); returns the lines."""
    days = polls / (VMS * 86400 / POLL_S)
    scenario = busier_fleet_mix(busier) if busier != 1.0 else sc.load("fleet-mix")
    engine = Engine(build_fleet(FleetSpec(vms=VMS, fault_domains=3)), scenario,
                    datetime(2026, 1, 5, tzinfo=timezone.utc), seed=7, options=EngineOptions(record_served=False))
    options = GenerateOptions(days=days, poll_interval_s=POLL_S, approve="user", change_only=change_only)
    with open_output(str(path)) as out:
        stats = generate(engine, options, out, seed=7)
    return stats.observations


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def run(path: Path, rounds: int, pandas_json: bool) -> Dict[str, List[float]]:
    options = pj.ParseOptions(explicit_schema=LINE, unexpected_field_behavior="ignore")
    contenders: Dict[str, Callable[[], object]] = {
        "parse": lambda: pj.read_json(path, parse_options=options).to_pandas(),
        "arrow": lambda: pj.read_json(path, parse_options=options),
        "ours": lambda: ea.event_lifecycles(ea.load_history(path)),
    }
    if pandas_json:
        contenders["pandas.read_json"] = lambda: pd.read_json(path, lines=True)
    times: Dict[str, List[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, action in contenders.items():
            times[name].append(timed(action))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pandas-json", action="store_true", help="also time pandas.read_json (slow)")
    parser.add_argument("--change-only", action="store_true",
                        help="a change-only history (the relay's): --observations polls, a line per change")
    parser.add_argument("--busier", type=float, default=1.0, help="multiply fleet-mix's per-day rates")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ea.HistoryWarning)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        count = make_history(path, args.observations, args.change_only, args.busier)
        size_mb = path.stat().st_size / 1e6
        times = run(path, args.rounds, args.pandas_json)
    medians = {name: statistics.median(values) for name, values in times.items()}
    kind = (f"change-only ({args.observations} polls, a line per change)" if args.change_only
            else "per-poll")
    print(f"history: {count} observations, {size_mb:.0f} MB, {kind}, fleet-mix x{args.busier:g}, {VMS} VMs, "
          f"{POLL_S:g} s polls; median of {args.rounds} alternating rounds")
    for name, seconds in medians.items():
        print(f"  {name:18} {seconds:8.3f} s   (runs: {', '.join(f'{t:.3f}' for t in times[name])})")
    ratio = medians["ours"] / medians["parse"]
    print(f"ratio ours / parse = {ratio:.2f} (target <= 4); ours / arrow table only = "
          f"{medians['ours'] / medians['arrow']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
