"""Run the whole-system fault model (tests/reliability/fault_model.py) over many seeded fleet-days and report.

    python tools/fault_model_run.py --fleet-days 10000            # make invariants
    python tools/fault_model_run.py --fleet-days 108 --first-failure  # what make invariant-mutants runs per mutant

Each fleet-day is one seed of one combination (fleet x faults x cycle period); combinations are taken in turn,
so any number of fleet-days covers them all evenly. Runs on every core (seeded: the same figures each time).
Exits 1 when any fleet-day breaks an invariant, printing its seed and combination (they reproduce it).
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
PERIODS = (60, 300)

Combo = Tuple[int, str, str, int]


def _stage() -> None:
    """Make ansible_collections.azure_imds.scheduled_events importable from this checkout (a staged copy)."""
    import tempfile

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tools.stage_collection import stage
    root = Path(tempfile.mkdtemp(prefix="fault-model-"))
    stage(root)
    sys.path.insert(0, str(root))


def combos(fleet_days: int) -> List[Combo]:
    from tests.reliability.fault_model import FAULTS, FLEETS
    kinds = list(itertools.product(sorted(FLEETS), sorted(FAULTS), PERIODS))
    return [(index // len(kinds),) + kinds[index % len(kinds)] for index in range(fleet_days)]


def one(combo: Combo) -> Dict[str, object]:
    from tests.reliability.fault_model import FAULTS, simulate
    seed, fleet, faults, period = combo
    run = simulate(seed, FAULTS[faults], period, fleet=fleet)
    return {"combo": combo, "problems": run.verdict.problems, "cycles": run.cycles, "drains": run.ledger.drains,
            "undrains": run.ledger.undrains, "approvals": run.verdict.approvals, "kills": run.verdict.kills,
            "late_drains": run.verdict.late_drains}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-days", type=int, default=10000)
    parser.add_argument("--first-failure", action="store_true", help="stop at the first fleet-day that fails")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    _stage()
    from tests.reliability.fault_model import role_order_problems
    drift = role_order_problems(REPO / "roles" / "maintenance_cycle")
    if drift:
        print(f"FAILED: the role no longer runs the cycle in the model's order: {drift[0]}")
        return 1
    started = time.monotonic()
    totals: Counter = Counter()
    kinds: Counter = Counter()
    failed: List[Dict[str, object]] = []
    with ProcessPoolExecutor(args.workers, initializer=_stage) as pool:
        for result in pool.map(one, combos(args.fleet_days), chunksize=4):
            totals.update({k: result[k] for k in ("cycles", "drains", "undrains", "approvals", "kills", "late_drains")})
            totals["fleet-days"] += 1
            if result["problems"]:
                failed.append(result)
                kinds.update(p.split(":", 1)[0] for p in result["problems"])  # type: ignore[union-attr]
                seed, fleet, faults, period = result["combo"]  # type: ignore[misc]
                print(f"FAILED seed {seed}, {fleet}, {faults}, {period} s: {result['problems'][:2]}", flush=True)
                if args.first_failure:
                    pool.shutdown(cancel_futures=True)
                    break
    seconds = time.monotonic() - started
    print(f"{totals['fleet-days']} fleet-days ({', '.join(f'{p} s' for p in PERIODS)} cycles), {totals['cycles']} "
          f"cycles, {totals['drains']} drains, {totals['undrains']} undrains, {totals['approvals']} approvals, "
          f"{totals['kills']} runs killed, {totals['late_drains']} late drains over the limit (the documented "
          f"exception), {len(failed)} fleet-days with violations {dict(kinds) or ''}, {seconds:.0f} s on "
          f"{args.workers} workers")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
