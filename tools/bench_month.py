"""Benchmark: a month of one-second relay histories of 2,000 VMs, from generation to the notebooks.

    python tools/bench_month.py [--days 30] [--vms-per-set 100] [--sets 20] [--parts 16] [--no-whole]
                                [--no-notebooks | --notebooks NAME,...]

1. Generates (or reuses, in build/bench-month/, when the same parameters made it: delete the folder after
   changing the simulator) a simulated change-only history as the event relays of the
   fleet would write it: fleet-mix's event rates, 20 availability sets of 100 VMs, one-second polls, the first
   VM of an event's resources approving user events; one .jsonl.gz file per day.
2. Measures, each in a fresh process (wall seconds and peak resident memory, the process's and its
   children's), side by side on the same files:
     * plain parse:  pyarrow's JSON reader with the schema, every day file into one pandas DataFrame (the
                     floor: reading the month without any analysis);
     * partition:    event_analysis.partition_history -> Parquet parts by host, one day file at a time;
     * part by part: open_history on the parts + fault_domain_windows, walk order and overlaps (what the
                     notebooks compute), one part in memory at a time;
     * whole:        open_history on the day files at once + the same (the unpartitioned way; --no-whole skips
                     it);
     * each notebook (or those --notebooks names), executed by papermill on the parts (its kernel's memory
       included).
Prints the figures as a table with the command that reproduces them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

START = datetime(2026, 1, 5, tzinfo=timezone.utc)
NOTEBOOKS = ("notice_times", "durations", "fault_domain_serialisation", "reaction")
_DAY = re.compile(r'"observed_at":"(\d{4}-\d{2}-\d{2})')


class DailyFiles:
    """A text sink that writes each line to the .jsonl.gz file of its observed_at day (lines come in time
    order, so one file is open at a time)."""

    def __init__(self, folder: Path):
        from imds_simulator.offline import open_output

        self.folder, self.open_output = folder, open_output
        self.day: Optional[str] = None
        self.out: Optional[IO[str]] = None
        self.files: List[Path] = []

    def write(self, line: str) -> int:
        day = _DAY.search(line).group(1)  # type: ignore[union-attr]
        if day != self.day:
            self.close()
            self.day, path = day, self.folder / f"relay-{day}.jsonl.gz"
            self.files.append(path)
            self.out = self.open_output(str(path))
        return self.out.write(line)  # type: ignore[union-attr]

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


def generate(folder: Path, days: float, vms_per_set: int, sets: int) -> Dict[str, object]:
    """The month's day files and a description (reused when a run with the same parameters made them)."""
    from imds_simulator import scenario as sc
    from imds_simulator.engine import Engine, EngineOptions
    from imds_simulator.fleet import FleetSpec, build_fleet
    from imds_simulator.offline import GenerateOptions, generate as generate_history

    key = {"days": days, "vms_per_set": vms_per_set, "sets": sets, "poll_s": 1.0, "scenario": "fleet-mix", "seed": 7}
    described = folder / "month.json"
    if described.is_file():  # reused when the same parameters made it and its files are all there
        made = json.loads(described.read_text())
        if made["key"] == key and len(list(folder.glob("relay-*.jsonl.gz"))) == made["files"]:
            return dict(made, reused=True)
    for old in folder.glob("relay-*.jsonl.gz"):
        old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    engine = Engine(build_fleet(FleetSpec(vms=vms_per_set, fault_domains=3, sets=sets)), sc.load("fleet-mix"),
                    START, seed=7, options=EngineOptions(record_served=False, record_changes=False))
    sink = DailyFiles(folder)
    began = time.perf_counter()
    stats = generate_history(engine, GenerateOptions(days=days, poll_interval_s=1.0, approve="user",
                                                     change_only=True), sink, seed=7)  # type: ignore[arg-type]
    sink.close()
    seconds = time.perf_counter() - began
    for path in sink.files:  # each day file is simulated data, and says so
        path.with_name(path.name + ".meta.json").write_text('{"simulated": true, "source": "tools/bench_month.py"}\n')
    polls = days * 86400.0 * vms_per_set * sets  # poll ticks (fleet-mix deletes no VM)
    description = {"key": key, "records": stats.observations + stats.approvals, "approvals": stats.approvals,
                   "events": stats.events, "polls": polls, "generate_s": round(seconds, 1),
                   "files": len(sink.files), "gz_mb": round(sum(p.stat().st_size for p in sink.files) / 1e6, 1)}
    description["generate_peak_mib"] = round(peak_mib())
    described.write_text(json.dumps(description, indent=1) + "\n")
    return description


# ----------------------------------------------------------------- measured steps (each in its own process)

def _plain_parse(folder: Path) -> str:
    import pyarrow as pa
    import pyarrow.json as pj

    from event_analysis.loading.history import _file_bytes
    from event_analysis.loading.schema import LINE

    options = pj.ParseOptions(explicit_schema=LINE, unexpected_field_behavior="ignore")
    tables = [pj.read_json(pa.BufferReader(_file_bytes(p)), parse_options=options)
              for p in sorted(folder.glob("relay-*.jsonl.gz"))]
    frame = pa.concat_tables(tables).to_pandas()
    return f"{len(frame)} records"


def _partition(folder: Path, parts: int) -> str:
    import shutil

    import event_analysis as ea

    target = folder / "parts"
    shutil.rmtree(target, ignore_errors=True)
    report = ea.partition_history(sorted(str(p) for p in folder.glob("relay-*.jsonl.gz")), target, parts=parts)
    return report.summary()


def _analyse(history: object) -> str:
    import event_analysis as ea

    view = ea.open_history(history)  # type: ignore[arg-type]
    windows = ea.fault_domain_windows(view.lifecycles)
    overlaps = ea.domain_overlaps(view.lifecycles)
    walk = ea.walk_order(windows)
    certain = int((overlaps["kind"] == "certain").sum())
    return (f"{len(view.lifecycles)} lifecycles, {len(windows)} fault-domain windows, {len(overlaps)} overlapping "
            f"pairs ({certain} certain), "
            f"{view.lifecycles['vm_set'].nunique()} sets, walk {walk[:60]}...")


def _notebook(folder: Path, name: str) -> str:
    import papermill

    os.environ["MPLBACKEND"] = "Agg"
    out = folder / f"{name}.executed.ipynb"
    papermill.execute_notebook(str(REPO / "notebooks" / f"{name}.ipynb"), str(out),
                               parameters={"history": str(folder / "parts")}, kernel_name="python3",
                               cwd=str(REPO / "notebooks"), progress_bar=False, execution_timeout=3600)
    return f"{out.stat().st_size / 1e6:.1f} MB executed"


def measure_here(step: str, folder: Path, parts: int) -> None:
    """Run one step in this process and print {"seconds", "peak_mib", "result"} as JSON."""
    import warnings

    warnings.simplefilter("ignore")
    began = time.perf_counter()
    if step == "generate":
        days, vms_per_set, sets = (float(x) for x in os.environ["BENCH_MONTH_FLEET"].split(","))
        result = json.dumps(generate(folder, days, int(vms_per_set), int(sets)))
    elif step == "plain-parse":
        result = _plain_parse(folder)
    elif step == "partition":
        result = _partition(folder, parts)
    elif step == "part-by-part":
        result = _analyse(str(folder / "parts"))
    elif step == "whole":
        result = _analyse(sorted(str(p) for p in folder.glob("relay-*.jsonl.gz")))
    else:
        result = _notebook(folder, step.split(":", 1)[1])
    seconds = time.perf_counter() - began
    print(json.dumps({"seconds": seconds, "peak_mib": peak_mib(), "result": result}))


def peak_mib() -> float:
    """This process's peak resident memory, or a child's (a notebook's kernel) if larger. VmHWM, not
    ru_maxrss: Linux carries ru_maxrss over fork and exec, so a process would report its parent's peak."""
    status = Path("/proc/self/status").read_text()
    own = int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1))  # type: ignore[union-attr]
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def measure(step: str, folder: Path, parts: int) -> Dict[str, object]:
    run = subprocess.run([sys.executable, __file__, "--measure", step, "--folder", str(folder), "--parts", str(parts)],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if run.returncode != 0:
        return {"seconds": float("nan"), "peak_mib": float("nan"), "result": f"FAILED: {run.stderr.strip()[-300:]}"}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--vms-per-set", type=int, default=100)
    parser.add_argument("--sets", type=int, default=20)
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--no-whole", action="store_true", help="skip reading the month unpartitioned")
    parser.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS), help="the notebooks to execute, by name")
    parser.add_argument("--folder", default=str(REPO / "build" / "bench-month"))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(args.folder)
    notebooks = [name for name in args.notebooks.split(",") if name]
    if not notebooks:
        parser.error("--notebooks names no notebook; --no-notebooks skips them.")
    unknown = sorted(set(notebooks) - set(NOTEBOOKS))
    if unknown:
        parser.error(f"--notebooks names {', '.join(unknown)}, which is no notebook; the notebooks are "
                     f"{', '.join(NOTEBOOKS)}.")
    if args.measure:
        measure_here(args.measure, folder, args.parts)
        return 0
    os.environ["BENCH_MONTH_FLEET"] = f"{args.days},{args.vms_per_set},{args.sets}"
    made = measure("generate", folder, args.parts)  # in a process of its own too: its memory is not the others'
    if str(made["result"]).startswith("FAILED"):
        print(f"bench_month: generating the history failed: {made['result']}", file=sys.stderr)
        return 1
    month = json.loads(str(made["result"]))
    vms = args.vms_per_set * args.sets
    print(f"history: {args.days:g} days, {vms} VMs ({args.sets} sets of {args.vms_per_set}), one-second polls "
          f"({month['polls']:.3g} polls), change-only: {month['records']} records, {month['events']} events, "
          f"{month['files']} day files, {month['gz_mb']} MB gzip; generated in {month['generate_s']} s"
          f"{' (reused from an earlier run)' if month.get('reused') else ''}, generator peak "
          f"{month.get('generate_peak_mib', made['peak_mib']):.0f} MiB")
    steps = ["plain-parse", "partition", "part-by-part"] + ([] if args.no_whole else ["whole"])
    steps += [] if args.no_notebooks else [f"notebook:{name}" for name in NOTEBOOKS if name in notebooks]
    rows = []
    for step in steps:
        figures = measure(step, folder, args.parts)
        rows.append((step, figures))
        print(f"  {step:34} {figures['seconds']:8.1f} s  peak {figures['peak_mib']:7.0f} MiB   {figures['result']}",
              flush=True)
    print("reproduce: python tools/bench_month.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
