"""A cycle killed (SIGKILL, the whole process group) at random points: every state file on the VMs is
the old or the new one, never partial, and the history stays readable; the next run finishes the job."""
from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import load_state
from tests.integration.runner import CycleBench
from tests.live_fleet import SMALL_SET, LiveFleet
from tests.history.history_helpers import capture_env, read_history
from tests.processes import kill_leftovers


def test_sigkill_at_random_points_leaves_old_or_new_state_and_a_readable_history(tmp_path: Path) -> None:
    # Time scale 3: the 15-minute notices (300-340 s) outlast the five killed runs and the final one, which
    # approves, by minutes on a loaded machine.
    fleet = LiveFleet("platform-maintenance", time_scale=3.0, seed=5, fleet=SMALL_SET)
    rng = random.Random(20261122)
    history = tmp_path / "history.jsonl"
    try:
        fleet.wait_for_events(timeout=10.0)
        bench = CycleBench(fleet, tmp_path / "bench")
        kills = [rng.uniform(1.0, 7.0) for _ in range(5)]
        for delay in kills:
            # A killed run's VM locks hold until their lease ends: 2 s here, so the next runs take them over.
            proc = bench.start(extra={"maintenance_cycle_lock_seconds": 2}, env=capture_env(history))
            time.sleep(delay)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            kill_leftovers(str(bench.inventory))
            for host in bench.hosts:
                path = bench.state_path(host)
                if path.exists():  # the old or the new state: always whole
                    _state, status, message = load_state(path.read_text())
                    assert status == "loaded", f"{host} after a kill at {delay:.1f} s: {message}"
            lines = read_history(history)
            assert [n for n, _ in lines.bad_lines] in ([], [len(lines.lines) - 1]), "only a torn last line"
        time.sleep(2)
        final = bench.run(env=capture_env(history))
        assert final.returncode == 0, final.stdout[-3000:]
        assert not list((bench.work / "state").glob("*.lock")), "the final run took over and released every lock"
        after = read_history(history)
        assert after.records and len(after.bad_lines) <= len(kills), "at most one torn line per kill"
        approved = [i for a in fleet.approvals() for i in a["event_ids"]]
        assert approved and len(approved) == len(set(approved)), "each event approved exactly once"
    finally:
        fleet.close()
