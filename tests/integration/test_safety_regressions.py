"""Issue 25, item 7: the two end-to-end safety defects, run by the real cycle playbook on simulated VMs.

- A run killed by SIGKILL from inside a prepare task: the VM it began to drain must get its recover once the
  event is gone, and no other fault domain's event may be approved while that VM is still drained.
- A short Freeze overlapping a Reboot still pending on the same host, with the shipped lb_drain_probe example:
  the Freeze's recover must not undo the Reboot's drain, and the Reboot must not be approved undrained.
- Item 6: an event prepared anyway (its NotBefore near) while another fault domain still owes its recover: the
  recover runs first in the same cycle, so two fault domains are never drained at once for the length of it.

Judged by ground truth only, never by the collection's state files: a ledger that the test's own prepare and
recover tasks write (tests/integration/files/ledger_*.yml: a drain line before any side effect, an undrain line
once a recover has finished), the simulator's record of approvals and events, and for the example a real HTTP
health endpoint that answers 503 while the host's marker file exists.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import FILES, CycleBench
from tests.integration.test_examples import EXAMPLES, HealthServer
from tests.live_fleet import LiveFleet
from tests.timing import epoch, wait_for

pytestmark = pytest.mark.live


class Ledger:
    """What the test's prepare/recover tasks did to each VM: one JSON line per drain and undrain, per host."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.extra = {"prepare_tasks": str(FILES / "ledger_prepare.yml"),
                      "recover_tasks": str(FILES / "ledger_recover.yml"), "ledger_dir": str(folder)}

    def entries(self, host: str, event_id: Optional[str] = None, action: Optional[str] = None) -> List[Dict[str, Any]]:
        path = self.folder / f"{host}.jsonl"
        found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
        return sorted((e for e in found if event_id in (None, e["event_id"]) and action in (None, e["action"])),
                      key=lambda e: e["at"])


def event(fleet: LiveFleet, event_id: str) -> Dict[str, Any]:
    (found,) = [e for e in fleet.truth() if e["event_id"] == event_id]
    return found


def approvals_of(fleet: LiveFleet, event_id: str) -> List[Dict[str, Any]]:
    return [a for a in fleet.approvals() if event_id in a["event_ids"]]


def wait_for_lease_to_end(bench: CycleBench, host: str) -> None:
    """The killed run's lease on the VM ends (as it would, minutes later, in production); read only for timing."""
    lock = Path(f"{bench.state_path(host)}.lock")
    if lock.exists():
        ends = epoch(json.loads(lock.read_text())["expires_at"])
        wait_for(lambda: time.time() > ends + 1.5, 60, "the killed run's lease on the VM to end")


# ----------------------------------------------------------------- killed mid-prepare

# One availability set, fault domain 0 (vm0) and 1 (vm1). Time scale 5 and 30-minute notices: 360 s, minutes
# more than the run each must outlast (the killed one, the next) needs on a loaded machine. The killed run leases its
# VMs for 3 s only, standing for the minutes after which a real lease of a dead run ends: the next run may then take
# the VM over.
def test_a_run_killed_mid_prepare_leaves_no_vm_drained_and_no_other_fault_domain_approved(tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=2, fault_domains=2))
    try:
        killed, other = fleet.vms
        assert [fleet.engine.fleet.vm(v).fault_domain for v in fleet.vms] == [0, 1]
        bench = CycleBench(fleet, tmp_path)
        ledger = Ledger(tmp_path / "ledger")
        (first_id,) = fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 1800, "resources": {"names": [killed]}})

        # Run 1, in a session of its own: the prepare task on `killed` writes its drain, then SIGKILLs the group.
        group_file = tmp_path / "kill-group"
        command, env = bench.command("cycle", False, True, True, dict(
            ledger.extra, ledger_kill_on=[killed], ledger_kill_group_file=str(group_file),
            maintenance_cycle_lock_seconds=3), 10, None)
        log = tmp_path / "run1.log"
        with log.open("w") as out:
            run = subprocess.Popen(command, env=env, cwd=bench.work, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        group_file.write_text(str(run.pid))
        try:
            returncode = run.wait(timeout=120)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
        assert returncode == -signal.SIGKILL, \
            f"setup: run 1 was not killed from its prepare task ({returncode}):\n{log.read_text()[-4000:]}"
        assert [e["action"] for e in ledger.entries(killed, first_id)] == ["drain"], "setup: no drain before the kill"
        assert fleet.approvals() == [] and event(fleet, first_id)["status"] == "Scheduled", "setup"

        # Azure withdraws the event; another fault domain's event appears. Run 2 goes to its end.
        fleet.cancel(first_id)
        wait_for_lease_to_end(bench, killed)
        (second_id,) = fleet.inject({"key": "fd1", "type": "Reboot", "notice_s": 1800,
                                     "resources": {"names": [other]}})
        began = time.time()
        second = bench.run(extra=ledger.extra)
        ended = time.time()
        assert second.returncode == 0, second.stdout[-4000:]
    finally:
        fleet.close()

    undrained = [e["at"] for e in ledger.entries(killed, first_id, "undrain")]
    problems = []
    if not any(began <= at <= ended for at in undrained):
        problems.append(f"{killed} was drained for {first_id} by the killed run and got no recover in the next "
                        f"run (undrains: {undrained})")
    for approval in approvals_of(fleet, second_id):
        if not undrained or epoch(approval["at"]) < min(undrained):
            problems.append(f"{second_id} of fault domain 1 was approved (by {approval['vm']} at {approval['at']}) "
                            f"while {killed} of fault domain 0 was still drained for {first_id}")
    assert not problems, "; ".join(problems)


# ----------------------------------------------------------------- prepare-anyway before recover

# Fault domain 0 (vm0) and 1 (vm1). vm0 is drained for a Reboot that Azure then withdraws (its recover is owed);
# vm1's Reboot must then wait for fault domain 0, but NotBefore is near (prepare_anyway_seconds covers any
# notice), so it is prepared anyway in the same run that owes vm0's recover. Before, the role prepared first.
# Time scale 5 and 30-minute notices: 360 s, minutes more than the one run each event must outlast.
def test_an_event_prepared_anyway_waits_for_the_owed_recover_of_another_fault_domain_in_its_cycle(
        tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=2, fault_domains=2))
    try:
        first, second = fleet.vms
        bench = CycleBench(fleet, tmp_path)
        ledger = Ledger(tmp_path / "ledger")
        hold = dict(ledger.extra, maintenance_cycle_approve_prepared_events=False,
                    maintenance_cycle_prepare_anyway_seconds=10 ** 6)
        (first_id,) = fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 1800, "resources": {"names": [first]}})
        run = bench.run(extra=hold)
        assert run.returncode == 0 and [e["action"] for e in ledger.entries(first)] == ["drain"], run.stdout[-3000:]
        fleet.cancel(first_id)
        (second_id,) = fleet.inject({"key": "fd1", "type": "Reboot", "notice_s": 1800,
                                     "resources": {"names": [second]}})
        run = bench.run(extra=hold)
        assert run.returncode == 0, run.stdout[-3000:]
    finally:
        fleet.close()
    (undrained,) = [e["at"] for e in ledger.entries(first, first_id, "undrain")]
    (drained,) = [e["at"] for e in ledger.entries(second, second_id, "drain")]
    assert undrained < drained, (f"{second} (fault domain 1) was drained for {second_id} at {drained}, before {first} "
                                 f"(fault domain 0) got its owed recover at {undrained}: two domains drained at once")


# ----------------------------------------------------------------- a short Freeze over a pending Reboot

INTERVAL, THRESHOLD = 1, 2  # the load balancer's probe, as in test_examples.py


# One VM, lb_drain_probe as shipped, a real health endpoint. Time scale 5: the Reboot's one-hour notice lasts 720 s,
# minutes more than runs 1-4 need on a loaded machine; the Freeze's 30-minute notice 360 s, more than run 2 needs;
# the 5-second Freeze is listed for 2 s once started. Runs 1-3 hold prepared events back
# (approve_prepared_events: false) so that the Reboot stays pending while the Freeze comes and goes; the short
# Freeze is approved at once all the same (the policy's default, approve_freeze_max_seconds 10). Run 4 is the
# default policy: the prepared Reboot may now be approved.
def test_a_short_freeze_over_a_pending_reboot_does_not_undo_the_reboots_drain(tmp_path: Path) -> None:
    with ExitStack() as cleanup:
        fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=1, fault_domains=1))
        cleanup.callback(fleet.close)
        (host,) = fleet.vms
        markers = tmp_path / "markers"
        marker = markers / host / "out-of-service"
        marker.parent.mkdir(parents=True)
        health = HealthServer(markers)
        cleanup.callback(health.close)
        idle = cleanup.enter_context(socket.create_server(("127.0.0.1", 0)))  # the service port: no clients
        bench = CycleBench(fleet, tmp_path)
        inventory = json.loads(bench.inventory.read_text())
        inventory["azure_vms"]["hosts"][host].update(
            example="lb_drain_probe", lb_drain_probe_become=False, lb_drain_probe_marker=str(marker),
            lb_drain_probe_url=f"http://127.0.0.1:{health.port}/{host}",
            lb_drain_probe_service_port=idle.getsockname()[1], lb_drain_probe_interval_seconds=INTERVAL,
            lb_drain_probe_unhealthy_threshold=THRESHOLD, lb_drain_probe_drain_seconds=60,
            lb_drain_probe_margin_seconds=10, lb_drain_probe_recover_seconds=30)
        bench.inventory.write_text(json.dumps(inventory))
        ledger = Ledger(tmp_path / "ledger")
        extra = dict(ledger.extra, examples_dir=str(EXAMPLES))
        hold = dict(extra, maintenance_cycle_approve_prepared_events=False)

        def cycle(variables: Dict[str, Any]) -> None:
            run = bench.run(extra=variables)
            assert run.returncode == 0, run.stdout[-4000:]

        (reboot_id,) = fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 3600, "started_for_s": 30,
                                     "resources": {"names": [host]}})
        cycle(hold)  # run 1: the Reboot is prepared (drained through the probe), not approved
        assert marker.exists() and health.answers(host, 503), "setup: the Reboot was not drained"
        drained_at = health.answers(host, 503)[0]
        assert fleet.approvals() == [] and event(fleet, reboot_id)["status"] == "Scheduled", "setup"

        (freeze_id,) = fleet.inject({"key": "freeze", "type": "Freeze", "duration_s": 5, "notice_s": 1800,
                                     "started_for_s": 10, "resources": {"names": [host]}})
        cycle(hold)  # run 2: the short Freeze is approved at once, runs and leaves the document
        assert approvals_of(fleet, freeze_id), "setup: the short Freeze was not approved at once"
        wait_for(lambda: event(fleet, freeze_id)["status"] == "Removed", 60, "the Freeze to be gone")
        cycle(hold)  # run 3: the Freeze is gone, the Reboot still pending
        assert event(fleet, reboot_id)["status"] == "Scheduled", "setup: the Reboot's notice ran out"

        problems = []
        undone = [at for at in health.answers(host, 200) if at > drained_at]
        if not marker.exists() or undone or ledger.entries(host, action="undrain"):
            problems.append(f"the Reboot's drain of {host} was undone (after Freeze {freeze_id} was gone) while "
                            f"Reboot {reboot_id} was still pending (marker "
                            f"{'present' if marker.exists() else 'removed'}, health answered 200 {len(undone)} "
                            f"time(s) after the drain, undrains: {ledger.entries(host, action='undrain')})")

        cycle(extra)  # run 4: the default policy; the prepared Reboot may be approved
        for approval in approvals_of(fleet, reboot_id):
            at = epoch(approval["at"])
            if [t for t in health.answers(host, 200) if drained_at < t < at] or \
                    [e for e in ledger.entries(host, action="undrain") if e["at"] < at]:
                problems.append(f"{reboot_id} was approved at {approval['at']} while {host} was back in the load "
                                f"balancer (its drain undone, the health endpoint answering 200)")
        assert not problems, "; ".join(problems)

        # Once the Reboot has run and is gone, its drain is undone (the recover still comes).
        if approvals_of(fleet, reboot_id):
            wait_for(lambda: event(fleet, reboot_id)["status"] == "Removed", 60, "the Reboot to be gone")
            gone_at = epoch(event(fleet, reboot_id)["removed_at"])
            cycle(extra)  # run 5
            assert not marker.exists(), "the Reboot's drain was never undone"
            assert [e for e in ledger.entries(host, reboot_id, "undrain") if e["at"] > gone_at]
