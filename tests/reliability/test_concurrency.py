"""Two maintenance runs on the same VMs at once (AWX without allow_simultaneous, a cron overlap, two
controllers): the lease lock on each VM lets one run work there and leaves the VM alone in the other,
with a sentence naming the holder. Real ansible-playbook runs on a simulated fleet.

The two tests of runs at once share one fleet (module-scoped `overlap`, one xdist group): one fault domain's event
over two VMs, two runs at once from two control nodes (only the VM locks keep them apart), then two runs at once on
one control node (its lock lets one through, which finishes the job). The tests of locks held, left behind or taken
over each start from a fleet of their own.
"""
from __future__ import annotations

import json
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import load_state
from imds_simulator.fleet import FleetSpec
from tests.integration.runner import CycleBench, PlaybookRun
from tests.live_fleet import LiveFleet
from tests.history.history_helpers import capture_env, read_history

HELD = "another maintenance run holds this VM"
CONTROL_HELD = "another run of this collection holds "
# One fault domain whose event lists both VMs: a leader and a follower, each a VM a lock can keep from a run. A quiet
# VM would only add its read to every run: it takes no part in what a lock decides.
PAIR = dict(vms=2, fault_domains=1)


def lock_path(bench: CycleBench, host: str) -> Path:
    return Path(str(bench.state_path(host)) + ".lock")


def foreign_lock(bench: CycleBench, host: str, minutes_left: float) -> Path:
    path = lock_path(bench, host)
    path.parent.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc)
    path.write_text(lock_text("other controller run 7 (AWX job 7)", now - timedelta(minutes=20), (20 + minutes_left) * 60))
    return path


def leftover_locks(bench: CycleBench) -> List[Path]:
    return sorted((bench.work / "state").glob("*.lock"))


def approved_ids(approvals: List[Dict[str, Any]]) -> List[str]:
    return [i for a in approvals for i in a["event_ids"]]


def at_once(bench: CycleBench, extra: Dict[str, Any], env: Optional[Dict[str, str]] = None) -> List[PlaybookRun]:
    """Two cycles started together; prepare takes 4 s, so each run holds what it took while the other reads."""
    runs: Dict[str, PlaybookRun] = {}
    start = threading.Barrier(2)

    def cycle(name: str) -> None:
        start.wait()
        runs[name] = bench.run(extra=dict(extra, prepare_pause_seconds=4), env=env)

    threads = [threading.Thread(target=cycle, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return list(runs.values())


# ---------------------------------------------------------------- two runs at once, then two on one control node

@dataclass
class Overlap:
    bench: CycleBench
    event_id: str
    history: Path
    apart: List[PlaybookRun]                 # two runs at once from two control nodes (no control-node lock)
    after_apart: Dict[str, Any]              # what the VMs and the simulator showed once both had ended
    together: List[PlaybookRun] = field(default_factory=list)  # then two at once on one control node
    approvals: List[Dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def overlap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Overlap]:
    """Platform maintenance at time scale 3: the 15-minute notice lasts 300-340 s, minutes more than the four runs
    (two at once, twice) need on a loaded machine."""
    fleet = LiveFleet("platform-maintenance", time_scale=3.0, seed=3, fleet=FleetSpec(**PAIR))
    try:
        fleet.wait_for_events(timeout=10.0)
        bench = CycleBench(fleet, tmp_path_factory.mktemp("overlap"))
        history = bench.work / "history.jsonl"
        (event,) = fleet.truth()
        # No control-node lock: as from two control nodes, only the VM locks keep the runs apart.
        apart = at_once(bench, {"controller_lock": ""}, env=capture_env(history))
        states = {h: bench.state_path(h).read_text() for h in bench.hosts if bench.state_path(h).exists()}
        shown = Overlap(bench, event["event_id"], history, apart, {
            "approvals": fleet.approvals(), "locks": leftover_locks(bench), "states": states})
        shown.together = at_once(bench, {})  # afterwards, on one control node: one of them finishes the job
        shown.approvals = fleet.approvals()
        yield shown
    finally:
        fleet.close()


@pytest.mark.xdist_group("concurrency-overlap")
def test_two_runs_at_once_share_out_the_vms_and_approve_each_event_once(overlap: Overlap) -> None:
    runs = overlap.apart
    assert all(r.returncode == 0 for r in runs), [r.stdout[-2000:] + r.stderr[-2000:] for r in runs]
    assert any(HELD in r.stdout for r in runs), "the runs overlapped and one left a VM alone"
    ids = approved_ids(overlap.after_apart["approvals"])
    assert len(ids) == len(set(ids)), "no event approved twice"
    for host, text in overlap.after_apart["states"].items():
        assert load_state(text)[1] == "loaded", f"{host}: state file damaged"
    captured = read_history(overlap.history)
    assert captured.bad_lines == [] and captured.records, "no interleaved history lines"
    assert overlap.after_apart["locks"] == [], "both runs released what they held"

    # Afterwards, one run (the one the control-node lock let through) finishes what the two left.
    (final,) = [r for r in overlap.together if CONTROL_HELD not in r.stdout]
    assert final.returncode == 0 and HELD not in final.stdout, final.stdout[-3000:]
    ids = approved_ids(overlap.approvals)
    assert ids and sorted(ids) == sorted(set(ids)) == [overlap.event_id]
    assert leftover_locks(overlap.bench) == []


@pytest.mark.xdist_group("concurrency-overlap")
def test_a_second_run_on_the_control_node_stops_before_touching_any_vm(overlap: Overlap) -> None:
    bench, runs = overlap.bench, overlap.together
    refused = [r for r in runs if CONTROL_HELD in r.stdout]
    assert len(refused) == 1, [r.stdout[-2000:] for r in runs]
    (loser,) = refused
    (winner,) = [r for r in runs if r is not loser]
    assert winner.returncode == 0 and loser.returncode != 0, winner.stdout[-2000:]
    assert f"{CONTROL_HELD}{bench.controller_lock} on this control node (Azure Scheduled Events maintenance cycle, pid " \
        in loser.stdout
    assert "this run stops before it touches any VM" in loser.stdout
    assert "Read scheduled events" not in loser.stdout, "the loser read no VM"
    assert len(approved_ids(overlap.approvals)) == 1, "the event approved once, by the winner or before it"
    assert not bench.controller_lock.exists(), "the winner released it"


# ---------------------------------------------------------------- VM locks held, left behind, taken over

@pytest.fixture
def bench(tmp_path: Path) -> Iterator[CycleBench]:
    """Platform maintenance at time scale 3: the 15-minute notice lasts 300-340 s, minutes more than a test's runs
    need on a loaded machine."""
    fleet = LiveFleet("platform-maintenance", time_scale=3.0, seed=3, fleet=FleetSpec(**PAIR))
    fleet.wait_for_events(timeout=10.0)
    yield CycleBench(fleet, tmp_path)
    fleet.close()


def test_a_vm_another_run_holds_is_left_alone_not_failed(bench: CycleBench) -> None:
    (event,) = bench.fleet.truth()
    leader = event["resources"][0]
    lock = foreign_lock(bench, leader, minutes_left=10)
    before = lock.read_text()
    checked = bench.run(check=True)  # check mode judges the lock, and takes none on the other VMs
    assert checked.returncode == 0 and HELD in checked.stdout and leftover_locks(bench) == [lock], checked.stdout[-3000:]
    run = bench.run()
    assert run.returncode == 0 and run.failed_hosts() == [], run.stdout[-3000:]
    assert f"{HELD} (other controller run 7 (AWX job 7), since " in run.stdout
    assert f"another maintenance run holds {leader}" in run.stdout, "the event waits, saying why"
    assert bench.fleet.approvals() == [] and lock.read_text() == before, "nothing approved; its lock untouched"
    assert leader not in {a["host"] for a in bench.actions("prepare")}
    assert bench.state(leader) is None, "its state is that run's to save"
    assert leftover_locks(bench) == [lock]


def test_locks_left_by_killed_runs_are_taken_over_and_the_cycle_goes_on(bench: CycleBench) -> None:
    """An expired VM lock, and a control-node lock whose ansible-playbook has ended."""
    (event,) = bench.fleet.truth()
    leader = event["resources"][0]
    foreign_lock(bench, leader, minutes_left=-1)
    dead = subprocess.Popen(["true"])  # a pid that has ended
    dead.wait()
    bench.controller_lock.write_text(json.dumps({"pid": dead.pid, "started": "1", "host": socket.gethostname(),
                                                 "owner": "killed run", "playbook": "cycle"}))
    run = bench.run()
    assert run.returncode == 0, run.stdout[-3000:]
    assert "took over the expired lock" in run.stdout + run.stderr
    assert f"took over {bench.controller_lock} from a run that has ended (pid {dead.pid})" in run.stdout + run.stderr
    (approval,) = bench.fleet.approvals()
    assert approval["vm"] == leader and leftover_locks(bench) == [] and not bench.controller_lock.exists()


@pytest.mark.parametrize("which", [0, 1], ids=["leader", "follower"])
def test_a_run_whose_lock_was_taken_over_approves_nothing(bench: CycleBench, which: int) -> None:
    (event,) = bench.fleet.truth()
    robbed = event["resources"][which]
    run = bench.run(extra={"steal_lock_on": [robbed]})  # while it prepares, its lease "runs out"
    assert run.returncode != 0 and run.failed_hosts() == [robbed], run.stdout[-3000:]
    assert "is now held by thief run (its lease ended), so nothing was done." in run.stdout
    assert bench.fleet.approvals() == []
    # Written ahead before the prepare tasks (its lock was its own then), and nothing after: no "done", no approval.
    state = bench.state(robbed)
    assert state["approved"] == [] and {r["prepare"] for r in state["events"]} == {"started"}, state
    assert leftover_locks(bench) == [lock_path(bench, robbed)], "the thief's lock stays; ours are released"
