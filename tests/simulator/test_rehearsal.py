"""`serve --inventory` and `serve --history`: a rehearsal's files, and what serve captures is never taken for real
data or for another run's (fresh EventIds per run unless a seed is given)."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import List

import pytest
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import DEFAULT_POLICY

import event_analysis as ea
from imds_simulator import rehearsal
from imds_simulator.fleet import FleetSpec, build_fleet
from tests.analysis.histories import observation, write_lines
from tests.timing import wait_for

REPO = Path(__file__).resolve().parents[2]


def serve(*args: str) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, "-m", "imds_simulator", "serve", "--port", "0", "--rate-limit", "0",
                             *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def served_event_ids(*args: str) -> List[str]:
    """The EventIds a fresh `serve` of a user's reboot lists (5 scenario seconds in, 9 wall seconds of notice), then
    it is stopped."""
    process = serve("--scenario", "user-reboot", "--time-scale", "100", *args)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert "ready at" in ready, process.stderr.read() if process.stderr else ready
        url = ready.split("ready at ", 1)[1].split()[0]
        def listed() -> List[str]:
            with urllib.request.urlopen(f"{url}/_simulator/events", timeout=10) as answer:
                return [event["event_id"] for event in json.loads(answer.read())["events"]]
        return wait_for(listed, 10, "the user's reboot")
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_each_run_serves_fresh_event_ids_unless_a_seed_is_given() -> None:
    """A restarted simulator serving the same EventId again is taken, by a saved state, for the event it already
    approved (nothing is done, silently), and by a history for the same event (one lifecycle over two runs)."""
    first, second = served_event_ids(), served_event_ids()
    assert first and second and first != second
    assert served_event_ids("--seed", "5") == served_event_ids("--seed", "5")


def test_a_history_captured_from_serve_is_marked_simulated_at_its_time_scale(tmp_path: Path) -> None:
    history = tmp_path / "captured.jsonl"
    process = serve("--time-scale", "30", "--history", str(history))
    try:
        assert process.stdout is not None and "ready at" in process.stdout.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
    write_lines(history, [observation(0, "vm0", [])])
    report = ea.report_of(ea.load_history(history))
    assert report.simulated and report.time_scale == 30


def test_serve_refuses_to_mark_a_history_that_holds_real_data(tmp_path: Path) -> None:
    history = write_lines(tmp_path / "real.jsonl", [observation(0, "vm0", [])])
    done = subprocess.run([sys.executable, "-m", "imds_simulator", "serve", "--port", "0", "--history", str(history)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "not marked as simulated" in line and "another history path" in line
    assert not Path(str(history) + ".meta.json").exists()


def test_the_rehearsal_inventory_gives_each_vm_its_own_state_and_scales_prepare_anyway(tmp_path: Path) -> None:
    fleet = build_fleet(FleetSpec(kind="availability_set", name="web", vms=3, fault_domains=3))
    inventory = rehearsal.write_rehearsal(tmp_path / "rehearsal", fleet.vms, lambda name: f"http://sim/{name}",
                                          10.0, "python -m imds_simulator serve ...")
    lines = inventory.read_text().splitlines()
    hosts = [line.split() for line in lines[lines.index("[azure_vms]") + 1:lines.index("")]]
    states = [field for host in hosts for field in host if field.startswith("maintenance_cycle_state_path=")]
    assert [host[0] for host in hosts] == [vm.name for vm in fleet.vms] and len(set(states)) == 3
    assert all(f"maintenance_cycle_imds_url=http://sim/{host[0]}" in host for host in hosts)
    assert rehearsal.PREPARE_ANYWAY_SECONDS == DEFAULT_POLICY["prepare_anyway_seconds"]
    assert "maintenance_cycle_prepare_anyway_seconds=48" in lines and "ansible_connection=local" in lines
    meta = json.loads((tmp_path / "rehearsal" / "history.jsonl.meta.json").read_text())
    assert meta["simulated"] is True and meta["time_scale"] == 10.0
    assert "path = " + str(tmp_path / "rehearsal" / "history.jsonl") in (inventory.parent / "ansible.cfg").read_text()


def test_the_rehearsal_never_replaces_an_inventory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "inventory.ini").write_text("[azure_vms]\nreal-vm0 ansible_host=10.0.1.4\n")
    done = subprocess.run([sys.executable, "-m", "imds_simulator", "serve", "--port", "0", "--inventory",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "was not written by the simulator" in done.stderr
    assert "real-vm0" in (tmp_path / "inventory.ini").read_text()


def test_a_history_is_never_described_at_two_time_scales(tmp_path: Path) -> None:
    """Appending a rehearsal at another time scale would mix two clocks in one history: refused, not rewritten."""
    history = tmp_path / "rehearsal.jsonl"
    rehearsal.mark_simulated(history, "serve --time-scale 10", 10.0, "a rehearsal")
    write_lines(history, [observation(0, "vm0", [])])
    rehearsal.mark_simulated(history, "serve --time-scale 10", 10.0, "a rehearsal")  # the same clock: appended to
    with pytest.raises(rehearsal.RehearsalError, match="at time scale 30") as refused:
        rehearsal.mark_simulated(history, "serve --time-scale 30", 30.0, "a rehearsal")
    assert str(refused.value).count(". ") == 0
    assert json.loads(Path(str(history) + ".meta.json").read_text())["time_scale"] == 10.0
