"""Run the whole-system fault model (tests/reliability/fault_model.py) over many seeded fleet-days and report.

    python tools/fault_model_run.py --fleet-days 10000 --resume   # make invariants
    python tools/fault_model_run.py --fleet-days 108 --first-failure  # what make invariant-mutants runs per mutant

Each fleet-day is one seed of one combination: scheduled runs (fleet x faults x cycle period); every
EVENT_DRIVEN_EVERY-th fleet-day, the event-driven path (fleet x faults x how the rulebook runs its cycles), which
costs about ten times as much; every SPLIT_EVERY-th, a set split over two scheduled runs (fleet x faults), each
its own target; and every CONTROL_PLANE_EVERY-th, scheduled runs with every other VM on the control-plane transport
(fleet x faults, tests/reliability/fault_model_control_plane.py), and as many (at index 3, 13, ...) of the same fleet
driven by Event Grid notifications (delayed, repeated, lost) with a fallback cycle every 15 minutes. Of every
DEPLOYMENTS_EVERY, five take a scheduled one's place with the deployments of issue 43 (each judged the same way):
AWX jobs with a fresh home (a shared store, or the default one, refused), hosts of two groups with different
settings (refused), VMs whose state is on an ephemeral OS disk, two controllers acting on the same VMs through one
store, and control-plane Spot VMs started again after their eviction (tests/reliability/fault_model_deployments.py).
Combinations are taken in turn, so any number of fleet-days covers them all evenly.
Runs on every core (seeded: the same figures each time).
Exits 1 when any fleet-day breaks an invariant, printing its seed and combination (they reproduce it).

--resume keeps a journal of finished fleet-days in build/invariants/, one file per version of the code the verdict
depends on (the collection, the model, the simulator, this runner: CODE, hashed), and skips what it holds: 10,000
fleet-days are hours of CPU on 2 cores, and a run stopped part-way, or run in parts, counts every fleet-day once.
Fleet-day N is the same combination whatever the total, so parts add up; a change to that code starts a new journal.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
JOURNALS = REPO / "build" / "invariants"
CODE = ("plugins", "roles/maintenance_cycle", "imds_simulator", "tests/reliability/fault_model.py",
        "tests/reliability/fault_model_event_driven.py", "tests/reliability/fault_model_control_plane.py",
        "tests/reliability/fault_model_deployments.py", "tools/fault_model_run.py",
        "tools/stage_collection.py")  # what a fleet-day's verdict depends on
COUNTED = ("cycles", "drains", "undrains", "approvals", "kills", "late_drains", "refusals", "event_driven", "split",
           "split_refused", "taken_as_deleted", "pushes", "pushes_refused", "pushes_dropped", "control_plane",
           "control_plane_blind", "acknowledged", "event_grid", "notifications", "graph_waits", "fresh_home",
           "jobs_refused", "homes_lost", "per_group", "reset_disk", "disk_resets", "disk_refusals", "two_controllers",
           "spot_restart", "restarted", "hidden_by_lag")
PERIODS = (60, 300)
EVENT_DRIVEN_EVERY = 5
SPLIT_EVERY = 10  # at index 2, 12, 22, ... (never an event-driven one)
SPLIT = "split"
CONTROL_PLANE_EVERY = 10  # at index 7, 17, 27, ... (never an event-driven or a split one)
CONTROL_PLANE = "control-plane"
EVENT_GRID = "event-grid"
DEPLOYMENTS_EVERY = 20  # at index 0, 1, 6, 10 and 11 of every 20 (scheduled ones' places)
FRESH_HOME = {"fresh-home, shared store": "postgresql://awx-postgres/scheduled_events",  # what AWX users may name
              "fresh-home, home store": "file:"}  # the default, under the job's home: every job refused
PER_GROUP, RESET_DISK, TWO_CONTROLLERS, SPOT_RESTART = "per-group", "reset-disk", "two-controllers", "spot-restart"
DEPLOYMENT_AT = {0: "fresh-home", 1: PER_GROUP, 6: RESET_DISK, 10: TWO_CONTROLLERS, 11: SPOT_RESTART}

Combo = Tuple[int, str, str, object]  # (seed, fleet, faults, a cycle period in seconds or an event-driven setup)


def _stage() -> Path:
    """A staged copy of this checkout's collection (removed by main at the end), importable here."""
    import tempfile

    _importable(None)
    from tools.stage_collection import stage
    root = Path(tempfile.mkdtemp(prefix="fault-model-"))
    stage(root)
    _importable(root)
    return root


def _importable(root: Optional[Path]) -> None:
    """This checkout (tests, tools, the simulator) and, with `root`, ansible_collections.azure_imds.scheduled_events
    from the staged copy; also each worker's initializer."""
    for path in (str(REPO), str(root) if root else None):
        if path and path not in sys.path:
            sys.path.insert(0, path)


DEPLOYMENT_COUNTED = ("fresh_home", "per_group", "reset_disk", "two_controllers", "spot_restart")
KINDS = ("all", "scheduled", "event-driven", "split", "control-plane", "event-grid") + tuple(DEPLOYMENT_AT.values())


def combos(fleet_days: int, only: str = "all") -> List[Combo]:
    """The fleet-days to run, in turn; `only` one kind of them (a mutant whose code runs in no other kind)."""
    from tests.reliability.fault_model import FAULTS, FLEETS
    from tests.reliability.fault_model_control_plane import CONTROL_PLANE_FAULTS
    from tests.reliability.fault_model_event_driven import SETUPS
    scheduled = list(itertools.product(sorted(FLEETS), sorted(FAULTS), PERIODS))
    control_plane = list(itertools.product(sorted(FLEETS), sorted(CONTROL_PLANE_FAULTS), [CONTROL_PLANE]))
    event_grid = list(itertools.product(sorted(FLEETS), sorted(CONTROL_PLANE_FAULTS), [EVENT_GRID]))
    event_driven = list(itertools.product(sorted(FLEETS), sorted(FAULTS), sorted(SETUPS)))
    split = list(itertools.product(sorted(FLEETS), sorted(FAULTS), [SPLIT]))
    deployments = {"fresh-home": list(itertools.product(sorted(FLEETS), sorted(CONTROL_PLANE_FAULTS),
                                                        sorted(FRESH_HOME))),
                   PER_GROUP: list(itertools.product(sorted(FLEETS), sorted(FAULTS), [PER_GROUP])),
                   RESET_DISK: list(itertools.product(sorted(FLEETS), sorted(FAULTS), [RESET_DISK])),
                   TWO_CONTROLLERS: list(itertools.product(sorted(FLEETS), sorted(CONTROL_PLANE_FAULTS),
                                                           [TWO_CONTROLLERS])),
                   SPOT_RESTART: list(itertools.product(sorted(FLEETS), sorted(CONTROL_PLANE_FAULTS), [SPOT_RESTART]))}
    chosen, counts = [], Counter()
    for index in range(fleet_days):
        kinds = (event_driven if index % EVENT_DRIVEN_EVERY == EVENT_DRIVEN_EVERY - 1
                 else split if index % SPLIT_EVERY == 2
                 else control_plane if index % CONTROL_PLANE_EVERY == 7
                 else event_grid if index % CONTROL_PLANE_EVERY == 3
                 else deployments[DEPLOYMENT_AT[index % DEPLOYMENTS_EVERY]]
                 if index % DEPLOYMENTS_EVERY in DEPLOYMENT_AT else scheduled)
        if only != "all":
            kinds = dict({"scheduled": scheduled, "event-driven": event_driven, "split": split,
                          CONTROL_PLANE: control_plane, EVENT_GRID: event_grid}, **deployments)[only]
        turn = counts[id(kinds)]
        counts[id(kinds)] += 1
        chosen.append((turn // len(kinds),) + kinds[turn % len(kinds)])
    return chosen


def code_version(root: Path = REPO) -> str:
    """A hash of CODE's files (names and bytes): a journal is only ever added to by the code that began it."""
    digest = hashlib.sha256()
    for top in CODE:
        path = root / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*")
                                                      if p.is_file() and "__pycache__" not in p.parts)
        for file in files:
            digest.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def journaled(path: Path) -> Iterator[Dict[str, object]]:
    """The fleet-days a journal holds (a line torn by a kill is skipped: that fleet-day runs again)."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if not isinstance(result, dict) or not isinstance(result.get("combo"), list):
            continue
        result["combo"] = tuple(result["combo"])
        yield result


def one(combo: Combo) -> Dict[str, object]:
    started = time.process_time()
    result = _one(combo)
    result["cpu_s"] = round(time.process_time() - started, 3)
    return result


def _one(combo: Combo) -> Dict[str, object]:
    from tests.reliability.fault_model import FAULTS, simulate
    from tests.reliability.fault_model_control_plane import (
        CONTROL_PLANE_FAULTS,
        EVENT_GRID_FAULTS,
        control_plane_run,
        event_grid_run,
        fresh_home_run,
    )
    from tests.reliability.fault_model_deployments import (
        per_group_run,
        reset_disk_run,
        spot_restart_run,
        two_controllers_run,
    )
    from tests.reliability.fault_model_event_driven import PUSH_FAULTS, event_driven_run, split_run
    seed, fleet, faults, how = combo
    if isinstance(how, int):
        run = simulate(seed, FAULTS[faults], how, fleet=fleet)
    elif how == CONTROL_PLANE:
        given, back = CONTROL_PLANE_FAULTS[faults]
        run = control_plane_run(seed, given, back, PERIODS[0], fleet=fleet)
    elif how == EVENT_GRID:
        given, back = CONTROL_PLANE_FAULTS[faults]
        run = event_grid_run(seed, given, back, *EVENT_GRID_FAULTS[faults], fleet=fleet)
    elif how in FRESH_HOME:
        run = fresh_home_run(seed, *CONTROL_PLANE_FAULTS[faults], FRESH_HOME[how], fleet=fleet)
    elif how == PER_GROUP:
        run = per_group_run(seed, FAULTS[faults], PERIODS[0], fleet=fleet)
    elif how == RESET_DISK:
        run = reset_disk_run(seed, FAULTS[faults], PERIODS[0], fleet=fleet)
    elif how == TWO_CONTROLLERS:
        run = two_controllers_run(seed, *CONTROL_PLANE_FAULTS[faults], PERIODS[0], fleet=fleet)
    elif how == SPOT_RESTART:
        run = spot_restart_run(seed, *CONTROL_PLANE_FAULTS[faults], PERIODS[0], fleet=fleet)
    elif how == SPLIT:
        run = split_run(seed, FAULTS[faults], PERIODS[0], fleet=fleet)
    else:
        run = event_driven_run(seed, FAULTS[faults], PUSH_FAULTS[faults], how, fleet=fleet)
    return {"combo": combo, "problems": run.verdict.problems, "cycles": run.cycles, "drains": run.ledger.drains,
            "undrains": run.ledger.undrains, "approvals": run.verdict.approvals, "kills": run.verdict.kills,
            "late_drains": run.verdict.late_drains, "refusals": run.refusals,
            "event_driven": int(not isinstance(how, int) and how not in (SPLIT, CONTROL_PLANE, EVENT_GRID)
                                and how not in FRESH_HOME and how not in DEPLOYMENT_AT.values()),
            "fresh_home": int(how in FRESH_HOME), "jobs_refused": getattr(run, "jobs_refused", 0),
            "homes_lost": getattr(run, "homes_lost", 0), "per_group": int(how == PER_GROUP),
            "reset_disk": int(how == RESET_DISK), "disk_resets": getattr(run, "resets", 0),
            "disk_refusals": getattr(run, "disk_refusals", 0), "two_controllers": int(how == TWO_CONTROLLERS),
            "spot_restart": int(how == SPOT_RESTART), "restarted": getattr(run, "restarted", 0),
            "split": int(how == SPLIT), "control_plane": int(how == CONTROL_PLANE), "event_grid": int(how == EVENT_GRID),
            "notifications": getattr(run, "notifications", 0), "graph_waits": getattr(run, "waits", 0),
            "control_plane_blind": getattr(run, "blind", 0), "acknowledged": getattr(run, "acknowledged", 0),
            "hidden_by_lag": len(getattr(run, "hidden_by_lag", ())),
            "split_refused": run.split_refused, "taken_as_deleted": run.taken_as_deleted,
            "pushes": getattr(run, "pushes", 0),
            "pushes_refused": getattr(run, "refused", 0), "pushes_dropped": getattr(run, "duplicates", 0)}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet-days", type=int, default=10000)
    parser.add_argument("--first-failure", action="store_true", help="stop at the first fleet-day that fails")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", choices=KINDS, default="all", help="run one kind of fleet-day only")
    parser.add_argument("--resume", action="store_true",
                        help="count the fleet-days this code's journal holds, run the rest, journal them")
    parser.add_argument("--journals", type=Path, default=JOURNALS, help="where the journals are kept")
    one_or_failed = parser.add_mutually_exclusive_group()
    one_or_failed.add_argument("--combo", type=_combo, default=None,
                               help='run this one fleet-day only, as a failure prints it: [seed, fleet, faults, how]')
    one_or_failed.add_argument("--failed-in", type=Path, default=None, metavar="JOURNAL",
                               help="run only the fleet-days that failed in this journal (an earlier version's), "
                                    "under this code: what a fix of the judge or of the code leaves of a long run's "
                                    "failures")
    args = parser.parse_args(argv)
    if args.failed_in and not args.failed_in.is_file():
        print(f"--failed-in {args.failed_in}: no such journal file.")
        return 2
    root = _stage()
    try:
        return _run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(args: argparse.Namespace, root: Path) -> int:
    from tests.reliability.fault_model import role_order_problems
    drift = role_order_problems(REPO / "roles" / "maintenance_cycle")
    if drift:
        print(f"FAILED: the role no longer runs the cycle in the model's order: {drift[0]}")
        return 1
    started = time.monotonic()
    totals: Counter = Counter()
    kinds: Counter = Counter()
    failed: List[Dict[str, object]] = []
    if args.failed_in:
        # once each, in the journal's order; a line that is no fleet-day's result is not one
        again = [r["combo"] for r in journaled(args.failed_in) if r.get("problems")]
        wanted = list(dict.fromkeys(again))  # type: ignore[arg-type]
        print(f"{len(wanted)} fleet-days failed in {args.failed_in}; running them again under this code", flush=True)
    else:
        wanted = [tuple(args.combo)] if args.combo else combos(args.fleet_days, args.only)  # type: ignore[list-item]
    journal = args.journals / f"{code_version()}.jsonl" if args.resume else None
    wanted_set = set(wanted)
    earlier = [r for r in journaled(journal) if r["combo"] in wanted_set] if journal else []
    done: Set[Combo] = {r["combo"] for r in earlier}  # type: ignore[misc]
    if journal:
        journal.parent.mkdir(parents=True, exist_ok=True)
        print(f"journal {journal}: {len(done)} of these {len(wanted)} fleet-days already run",
              flush=True)
    results = _results(args, root, [c for c in wanted if c not in done], journal)
    for result in itertools.chain(earlier, results):
        totals.update({k: result[k] for k in COUNTED})
        totals["fleet-days"] += 1
        totals["cpu_s"] += result.get("cpu_s", 0.0)  # type: ignore[arg-type]
        if result["problems"]:
            failed.append(result)
            kinds.update(p.split(":", 1)[0] for p in result["problems"])  # type: ignore[union-attr]
            print(f"FAILED {_named(result['combo'])}: {result['problems'][:2]}", flush=True)  # type: ignore[index]
            print(f"    COMBO {json.dumps(result['combo'])}", flush=True)  # --combo runs it alone
            if args.first_failure:
                results.close()
                break
    seconds = time.monotonic() - started
    scheduled = (totals['fleet-days'] - totals['event_driven'] - totals['split'] - totals['control_plane']
                 - totals['event_grid'] - sum(totals[k] for k in DEPLOYMENT_COUNTED))
    print(f"{totals['fleet-days']} fleet-days ({scheduled} scheduled every {' or '.join(f'{p} s' for p in PERIODS)}, "
          f"{totals['event_driven']} event-driven, {totals['split']} split over two runs, {totals['control_plane']} "
          f"half on the control plane: {totals['acknowledged']} acknowledged, {totals['control_plane_blind']} "
          f"claims blind, {totals['hidden_by_lag']} Started events Resource Graph's lag hid from a run that "
          f"drained), {totals['event_grid']} from Event Grid ({totals['notifications']} notifications, "
          f"{totals['graph_waits']} reads again for Resource Graph to catch up), {totals['fresh_home']} of AWX "
          f"jobs with a fresh home ({totals['jobs_refused']} jobs refused, {totals['homes_lost']} homes lost), "
          f"{totals['per_group']} of two groups' settings, {totals['reset_disk']} with ephemeral OS disks "
          f"({totals['disk_resets']} states erased, {totals['disk_refusals']} reads refused), "
          f"{totals['two_controllers']} of two controllers through one store, {totals['spot_restart']} of Spot VMs "
          f"started again ({totals['restarted']} restarts), {totals['cycles']} "
          f"cycles, {totals['drains']} drains, {totals['undrains']} undrains, {totals['approvals']} approvals, "
          f"{totals['kills']} runs killed, {totals['late_drains']} late drains over the limit (the documented "
          f"exception), {totals['refusals']} cycles refused before acting, {totals['split_refused']} events refused "
          f"in split sets, {totals['taken_as_deleted']} hosts taken as deleted, {totals['pushes']} pushes "
          f"({totals['pushes_refused']} refused, {totals['pushes_dropped']} dropped as replays), {len(failed)} "
          f"fleet-days with violations {dict(kinds) or ''}, {seconds:.0f} s on {args.workers} workers"
          + (f"; {totals['cpu_s'] / 3600:.1f} CPU-hours in all, {len(done)} fleet-days of them from the journal"
             if journal else ""))
    return 1 if failed else 0


def _results(args: argparse.Namespace, root: Path, todo: List[Combo], journal: Optional[Path]
             ) -> Iterator[Dict[str, object]]:
    """Each fleet-day's result, in order, as the workers finish them; journaled first (one line, flushed)."""
    pool = ProcessPoolExecutor(args.workers, initializer=_importable, initargs=(root,))
    out = journal.open("a") if journal else None
    try:
        for result in pool.map(one, todo, chunksize=4):
            if out:
                out.write(json.dumps(result) + "\n")
                out.flush()
            yield result
    finally:
        if out:
            out.close()
        pool.shutdown(cancel_futures=True)


def _combo(text: str) -> Combo:
    """--combo's value: the JSON list a failure prints, [seed, fleet, faults, how]."""
    value = json.loads(text)
    if not (isinstance(value, list) and len(value) == 4):
        raise argparse.ArgumentTypeError("a fleet-day is [seed, fleet, faults, how], as a failure prints it")
    return tuple(value)  # type: ignore[return-value]


def _named(combo: Combo) -> str:
    seed, fleet, faults, how = combo
    how = (f"{how} s" if isinstance(how, int) else "split over two runs" if how == SPLIT
           else "half on the control plane" if how == CONTROL_PLANE
           else "half on the control plane, from Event Grid" if how == EVENT_GRID
           else f"half on the control plane, AWX jobs, {how}" if how in FRESH_HOME
           else how if how in DEPLOYMENT_AT.values() else f"event-driven, {how}")
    return f"seed {seed}, {fleet}, {faults}, {how}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
