"""The event-driven path end to end: relays as local processes on the simulator's VM roots, the real
ansible-rulebook (Java) with the collection's rulebook and source, and the real cycle it runs.

Time scale 10 and a 40-minute notice: 240 s, minutes more than the relay's push and the cycle need to approve on a
machine busy with the other suites (a shorter notice lets the event start unapproved under load: a timing, not the
rule under test); once approved, the event is Started for 60 s.
Two VMs, each with its relay: vm0's event, and vm1 whose key the forged push uses. The relays poll IMDS at their
default interval (a second: nothing here needs a faster reaction) and send a heartbeat every 10 s (the source counts a
host stale after 90 s unheard: a stale host would start cycles of its own).
Assertions are on the simulator's ground truth and the prepare/recover log, never on absolute times.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Callable, List


from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import SIGNATURE_HEADER, relay_key, sign
from imds_simulator.fleet import FleetSpec
from tests.eda.rulebook_setup import RulebookSetup, listening
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet
from tests.relay.test_relay_process import RelayBench
from tests.timing import epoch, wait_for

TOKEN = b"rulebook-test-token-0123456789"
CYCLE_PLAY = "PLAY [Azure Scheduled Events maintenance cycle]"
TIME_SCALE = 10.0



def forged_push(port: int, host: str, event: dict) -> int:
    """A push signed with the host's real key (the worst case: a key stolen from that VM) claiming an event IMDS
    never served."""
    import urllib.request
    body = json.dumps({"version": 1, "kind": "change", "host": host, "relay_id": "forger", "seq": 1, "quiet": False,
                       "document_available": True,
                       "record": {"document_incarnation": 99, "events": [event]}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/push", data=body, method="POST", headers={
        "Content-Type": "application/json", SIGNATURE_HEADER: sign(body, relay_key(TOKEN, host), time.time())})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.status


def test_relays_and_the_rulebook_prepare_approve_and_recover_and_a_forged_push_approves_nothing(
        tmp_path: Path) -> None:
    assert shutil.which("java"), "ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless"
    fleet = LiveFleet(None, time_scale=TIME_SCALE, fleet=FleetSpec(vms=2, fault_domains=2))
    bench = CycleBench(fleet, tmp_path)
    inventory = json.loads(bench.inventory.read_text())
    inventory["azure_vms"]["vars"]["maintenance_cycle_prepare_anyway_seconds"] = 480 / TIME_SCALE
    bench.inventory.write_text(json.dumps(inventory))
    setup = RulebookSetup(tmp_path, TOKEN, fleet.vms)
    port = setup.port
    log = (tmp_path / "rulebook.log").open("w")
    rulebook = setup.start(bench.inventory, log)
    relays: List[RelayBench] = []
    output: Callable[[], str] = lambda: (tmp_path / "rulebook.log").read_text()  # noqa: E731
    try:
        wait_for(lambda: listening(port) or rulebook.poll() is not None, 120, "the source to listen")
        assert rulebook.poll() is None, output()[-3000:]
        # The event is there when the relays start: their first documents start the one cycle that prepares and
        # approves (a cycle of quiet VMs first would cost a run and prove nothing more); the recover is started by
        # vm0's push of the event's end, a change.
        vm0 = fleet.vms[0]
        injected = time.time()
        (event_id,) = fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 2400, "resources": {"names": [vm0]}})
        for vm in fleet.vms:
            relay = RelayBench(tmp_path, fleet, vm, port, token=relay_key(TOKEN, vm), heartbeat_seconds=10.0,
                               poll_interval=1.0, cycle_state_path=str(bench.state_path(vm)))
            relay.start()
            relays.append(relay)
        wait_for(lambda: bench.actions("recover"), 360, "the recover after the event is gone\n" + output()[-2000:])
        (event,) = fleet.truth()
        approvals = fleet.approvals()
        (prepare,) = bench.actions("prepare")
        (recover,) = bench.actions("recover")
        print(f"reaction (event injected -> prepare started): {prepare['at'] - injected:.1f} s")

        # A forged push (signed, but claiming an event that IMDS never served) starts a cycle: it approves nothing.
        runs_before = output().count(CYCLE_PLAY)
        assert forged_push(port, fleet.vms[1], {"EventId": "F0RGED", "EventType": "Reboot", "EventStatus": "Scheduled",
                                                "Resources": [fleet.vms[1]], "NotBefore": ""}) == 200
        wait_for(lambda: output().count(CYCLE_PLAY) > runs_before and "PLAY RECAP" in output().rsplit(CYCLE_PLAY, 1)[1],
                 120, "the cycle the forged push started")
        after_forgery = fleet.approvals()
    finally:
        for relay in relays:
            relay.stop()
        os.killpg(rulebook.pid, signal.SIGTERM)  # its own process group: the playbooks it runs too
        rulebook.wait(timeout=30)
        log.close()
        fleet.close()
    assert prepare["host"] == vm0 and prepare["event_id"] == event_id
    assert [a["event_ids"] for a in approvals] == [[event_id]] and approvals[0]["vm"] == vm0
    assert prepare["at"] < epoch(approvals[0]["at"]), "prepared before the approval"
    assert event["start_reason"] == "approved", "approved early, within the compressed notice"
    assert recover["host"] == vm0 and recover["at"] > epoch(event["removed_at"])
    assert after_forgery == approvals, "the forged push approved nothing"
    assert len(bench.actions("prepare")) == 1, "and prepared nothing"

