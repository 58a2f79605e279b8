"""tools/profile_cycle.py's arithmetic: the callback's lines into one row per task, in the order tasks started."""
from __future__ import annotations

from tools.profile_cycle import PREPARE_TASK, TaskRow, tasks_before_prepare, timeline


def test_each_task_runs_from_its_start_to_its_last_hosts_result() -> None:
    records = [{"kind": "task", "task": "a", "name": "claim", "action": "x", "t": 100.0},
               {"kind": "result", "task": "a", "host": "vm0", "status": "ok", "t": 101.0},
               {"kind": "result", "task": "a", "host": "vm1", "status": "ok", "t": 103.5},
               {"kind": "task", "task": "b", "name": "note", "action": "debug", "t": 103.6},
               {"kind": "result", "task": "b", "host": "vm0", "status": "skipped", "t": 103.7},
               {"kind": "task", "task": "c", "name": "plan", "action": "set_fact", "t": 104.0},
               {"kind": "end", "t": 104.5}]
    rows = timeline(records)
    assert [r.name for r in rows] == ["claim", "note", "plan"]
    assert rows[0] == TaskRow("claim", 0.0, 3.5, 2, 0)
    assert (rows[1].hosts, rows[1].skipped) == (1, 1)
    assert rows[2].wall_s == 0.0 and rows[2].hosts == 0, "a task no host answered took no time of its own"
    assert abs(rows[1].start_s - 3.6) < 1e-9
    assert timeline([]) == []


def test_tasks_before_the_prepare_are_counted_per_listed_host_apart_from_those_run_once() -> None:
    records = [{"kind": "task", "task": "a", "name": "claim", "t": 1.0},
               {"kind": "result", "task": "a", "host": "vm0", "status": "ok", "t": 1.1},
               {"kind": "result", "task": "a", "host": "vm1", "status": "ok", "t": 1.2},
               {"kind": "task", "task": "b", "name": "plan", "t": 2.0},     # run once: one result in all
               {"kind": "result", "task": "b", "host": "vm0", "status": "ok", "t": 2.1},
               {"kind": "task", "task": "c", "name": "note", "t": 3.0},
               {"kind": "result", "task": "c", "host": "vm0", "status": "skipped", "t": 3.1},
               {"kind": "result", "task": "c", "host": "vm1", "status": "skipped", "t": 3.1},
               {"kind": "task", "task": "d", "name": "role : " + PREPARE_TASK, "t": 4.0},
               {"kind": "result", "task": "d", "host": "vm0", "status": "ok", "t": 4.1},
               {"kind": "task", "task": "e", "name": "approve", "t": 5.0},
               {"kind": "result", "task": "e", "host": "vm0", "status": "ok", "t": 5.1},
               {"kind": "result", "task": "e", "host": "vm1", "status": "ok", "t": 5.1}]
    assert tasks_before_prepare(records, ["vm0", "vm1"]) == ([2, 2], 1)
