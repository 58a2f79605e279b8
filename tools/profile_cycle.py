"""Where a cycle's seconds go before the first prepare: one `azure_imds.scheduled_events.cycle` run over a simulated
set with a Platform Reboot of a whole fault domain, timed task by task (issue 28: reaction that does not grow with
the event).

    python tools/profile_cycle.py [--vms 200] [--forks 10] [--limit listed|all] [--top 12]

The set has --vms VMs in 3 fault domains (time scale 1); the Reboot (900 s notice) lists every VM of fault domain 0.
--limit listed runs the cycle on those VMs only, as the event-driven source limits a run to the hosts with news;
--limit all runs it on the whole set, as a scheduled cycle does. The prepare tasks are the test log tasks (no wait).
A development callback (tools/callbacks/task_timeline.py) records when each task starts and when each host's result
comes; the report gives, per task in the order run, its wall seconds (start to the last host's result) and hosts,
the first and last prepare (from the playbook's start), and the playbook's CPU (its process tree, reaped) against
its wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests.integration.runner import CycleBench  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tools.bench_busy_cycle import children_cpu  # noqa: E402
from tools.relay_fleet import environment  # noqa: E402

CALLBACKS = REPO / "tools" / "callbacks"


@dataclass
class TaskRow:
    name: str
    start_s: float   # from the playbook's first task
    wall_s: float    # to its last host's result
    hosts: int       # results (skipped included)
    skipped: int


def timeline(records: List[Dict[str, Any]]) -> List[TaskRow]:
    """The tasks in the order they started, from the callback's lines (a task's lines may interleave with the next
    one's start under the free strategy; each row is still its own task's)."""
    starts = [r for r in records if r["kind"] == "task"]
    if not starts:
        return []
    zero = starts[0]["t"]
    results: Dict[str, List[Dict[str, Any]]] = {}
    for record in records:
        if record["kind"] == "result":
            results.setdefault(record["task"], []).append(record)
    rows = []
    for task in starts:
        mine = results.get(task["task"], [])
        end = max([r["t"] for r in mine], default=task["t"])
        rows.append(TaskRow(task["name"], task["t"] - zero, end - task["t"], len(mine),
                            sum(1 for r in mine if r["status"] == "skipped")))
    return rows


PREPARE_TASK = "Run the prepare tasks once per event"


def tasks_before_prepare(records: List[Dict[str, Any]], listed: List[str]) -> Tuple[List[int], int]:
    """(per listed host, the tasks with a result for it, skipped included, that started before the role's prepare
    task did; the tasks of that time with one result in all: run once, or the control node's). Issue 44's lean
    role counts the first (every one costs the controller about 25 ms per host)."""
    starts = {r["task"]: r for r in records if r["kind"] == "task"}
    prepare_at = min((r["t"] for r in starts.values() if PREPARE_TASK in r["name"]), default=float("inf"))
    early = {uuid for uuid, r in starts.items() if r["t"] < prepare_at}
    hosts_of: Dict[str, set] = {}
    for record in records:
        if record["kind"] == "result" and record["task"] in early:
            hosts_of.setdefault(record["task"], set()).add(record["host"])
    per_host = [sum(1 for hosts in hosts_of.values() if host in hosts and len(hosts) > 1) for host in listed]
    return per_host, sum(1 for hosts in hosts_of.values() if len(hosts) == 1)


def profile(vms: int, forks: int, limit: str, work: Path) -> Dict[str, Any]:
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name="profile", vms=vms, fault_domains=3))
    try:
        (event_id,) = fleet.inject({"key": "fd0", "type": "Reboot", "source": "Platform", "notice_s": 900,
                                    "resources": {"fault_domain": 0}})
        (event,) = [e for e in fleet.truth() if e["event_id"] == event_id]
        listed = list(event["resources"])
        bench = CycleBench(fleet, work, hosts=listed if limit == "listed" else None)
        path = work / "timeline.jsonl"
        env = {"ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS), "ANSIBLE_CALLBACKS_ENABLED": "task_timeline",
               "TASK_TIMELINE_PATH": str(path)}
        cpu0, wall0 = children_cpu(), time.monotonic()
        run = bench.run(extra={"maintenance_cycle_approve_prepared_events": False}, forks=forks, env=env,
                        timeout=1800)
        cpu, wall = children_cpu() - cpu0, time.monotonic() - wall0
        if run.returncode != 0:
            raise SystemExit(f"the cycle failed (rc {run.returncode}):\n{run.stdout[-3000:]}")
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        zero = next(r["t"] for r in records if r["kind"] == "task")
        prepares = [a for a in bench.actions("prepare") if str(a["event_id"]).upper() == event_id.upper()]
        # the prepare log's wall clock against the callback's monotonic one: both from the playbook's first task
        offset = time.time() - time.monotonic()
        starts = sorted(a["at"] - offset - zero for a in prepares)
        per_host, once = tasks_before_prepare(records, listed)
        return {"vms": vms, "listed": len(listed), "hosts": len(bench.hosts), "forks": forks, "limit": limit,
                "per_host_tasks": per_host, "once_tasks": once,
                "wall_s": wall, "cpu_s": cpu, "rows": timeline(records), "prepared": len(prepares),
                "first_prepare_s": starts[0] if starts else None, "last_prepare_s": starts[-1] if starts else None}
    finally:
        fleet.close()


def report(found: Dict[str, Any], top: int, command: str) -> str:
    rows: List[TaskRow] = found["rows"]
    first: Optional[float] = found["first_prepare_s"]
    before = [r for r in rows if first is None or r.start_s + r.wall_s <= first]  # over before it began
    lines = [f"Command: `{command}`", "",
             f"{found['hosts']} hosts in the run ({found['listed']} listed by the Reboot of fault domain 0, "
             f"{found['vms']} VMs in the set), forks {found['forks']}: first prepare {fmt(first)} s, last "
             f"{fmt(found['last_prepare_s'])} s after the playbook's first task; the playbook {found['wall_s']:.1f} s "
             f"wall, {found['cpu_s']:.1f} CPU-s ({found['cpu_s'] / max(found['wall_s'], 1e-9):.2f} cores busy).", "",
             f"Tasks each listed host ran before the prepare (skipped ones included): "
             f"{min(found['per_host_tasks'], default=0)} to {max(found['per_host_tasks'], default=0)}, beside "
             f"{found['once_tasks']} run once for the play.", "",
             f"Before the first prepare: {len(before)} tasks over, {sum(r.wall_s for r in before):.1f} s of task "
             f"time; the {top} longest:", "",
             "| task | starts at | wall | hosts (skipped) |", "|---|---|---|---|"]
    for row in sorted(before, key=lambda r: -r.wall_s)[:top]:
        lines.append(f"| {row.name} | {row.start_s:.1f} s | {row.wall_s:.1f} s | {row.hosts} ({row.skipped}) |")
    return "\n".join(lines) + "\n"


def fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", type=int, default=200)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--limit", choices=["listed", "all"], default="listed")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="profile-cycle-") as scratch:
        environment(Path(scratch) / "env")
        found = profile(args.vms, args.forks, args.limit, Path(scratch) / "work")
    given = argv if argv is not None else sys.argv[1:]
    print(report(found, args.top, " ".join(["python tools/profile_cycle.py"] + given)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
