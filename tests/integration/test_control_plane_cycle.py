"""The maintenance cycle over both transports at once, by real ansible-playbook against the simulator over HTTPS (a
test CA): half the hosts read and approved through IMDS, half through the control plane (Resource Graph, then a
Microsoft.Maintenance acknowledge) with their VMs never contacted (their IMDS URL is a closed port, so any request
there fails the run) and their state kept on the controller. One plan over both: one fault domain at a time, events
seen by both transports are one event, approved once from their leader's transport; a control-plane host is
recovered when Resource Graph says Completed. Judged by what the simulator and the drain ledger recorded."""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Dict, List

from imds_simulator.fleet import FleetSpec
from tests.certificates import certificate_chain
from tests.history.history_helpers import assert_valid, capture_env, read_history
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet

CONTRIBUTOR = "Scheduled Events Contributor"


def drained_at_once(actions: List[Dict]) -> int:
    """The most fault domains drained at one time, by the prepare and recover log (the ledger of drains)."""
    drained: Dict[str, str] = {}
    most = 0
    for action in actions:
        if action["phase"] == "prepare":
            drained[action["host"]] = action["fd"]
        elif action["phase"] == "recover":
            drained.pop(action["host"], None)
        most = max(most, len(set(drained.values())))
    return most


def test_one_plan_over_imds_and_the_control_plane_approves_each_event_once_and_recovers_on_completed(
        tmp_path: Path) -> None:
    ca, cert, key = certificate_chain(tmp_path)
    # Time scale 5: 360 s of notice (three cycles on a machine loaded by the rest of make test and more take over
    # 200 s), Started for 30 s.
    # Resource Graph pages of one row (1,000 in Azure): every read of this test goes through the module's paging
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=4, fault_domains=2), simulate_impact=False,
                      graph_page_rows=1,
                      certfile=str(cert), keyfile=str(key), control_plane_tokens={"t-operator": [CONTRIBUTOR]},
                      control_plane_clients={"operator-app": {"secret": "operator-secret", "token": "t-operator"}})
    try:
        by_fd = {fd: [vm.name for vm in fleet.engine.fleet.vms if vm.fault_domain == fd] for fd in (0, 1)}
        on_control_plane = [by_fd[0][0], by_fd[1][1]]
        bench = CycleBench(fleet, tmp_path, control_plane=on_control_plane)
        # Each event's first listed host leads: the first through the control plane, the second through IMDS.
        (first,) = fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 1800, "started_for_s": 150,
                                 "resources": {"names": by_fd[0]}})
        (second,) = fleet.inject({"key": "fd1", "type": "Reboot", "notice_s": 1800, "started_for_s": 150,
                                  "resources": {"names": by_fd[1]}})
        history = tmp_path / "history.jsonl"
        env = {**capture_env(history), "AZURE_CLIENT_ID": "operator-app", "AZURE_SECRET": "operator-secret", "AZURE_TENANT": "contoso",
               "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
               "AZURE_CLOUD_ENVIRONMENT": fleet.sim.base_url, "REQUESTS_CA_BUNDLE": str(ca), "SSL_CERT_FILE": str(ca)}

        one = bench.run(env=env)
        assert one.returncode == 0, one.stdout[-4000:]
        status = {e["event_id"]: e["status"] for e in fleet.truth()}
        assert sorted(status.values()) == ["Scheduled", "Started"], "one fault domain approved, one deferred"
        # whichever event is the more urgent goes first (both have the same notice), and the run says why
        assert re.search(r"fault domain \d waits: availability set avset-web / fault domain \d \(event [0-9A-F-]+\) "
                         r"in maintenance \(limit 1\)", one.stdout), one.stdout[-3000:]
        started = next(i for i, s in status.items() if s == "Started")
        for host in on_control_plane:  # the write-ahead record of what it prepared, or saw
            assert bench.state(host) and not (tmp_path / "state" / f"{host}.json").exists(), \
                "a control-plane host's state is kept on the controller"

        deadline = time.monotonic() + 120
        while {e["event_id"]: e["status"] for e in fleet.truth()}[started] == "Started" and time.monotonic() < deadline:
            time.sleep(1)
        # The second cycle recovers the first fault domain (its drain is undone before another is made); the third
        # admits the other one.
        for _ in ("recover", "the other fault domain"):
            again = bench.run(env=env)
            assert again.returncode == 0, again.stdout[-4000:]
        approvals = [(a.get("via") or a["vm"], a["event_ids"]) for a in fleet.approvals() if a["accepted"]]
        captured = read_history(history)
    finally:
        fleet.close()
    assert sorted(approvals) == sorted([("control_plane", [first]), (by_fd[1][0], [second])]), \
        "each event once, by its leader's transport"
    assert approvals[0][1] == [started]
    fd_of = {vm: str(fd) for fd, vms in by_fd.items() for vm in vms}
    actions = [dict(a, fd=fd_of[a["host"]]) for a in bench.actions()]
    prepared = {(a["host"], a["event_id"]) for a in actions if a["phase"] == "prepare"}
    assert prepared == {(vm, first) for vm in by_fd[0]} | {(vm, second) for vm in by_fd[1]}
    recovered = {(a["host"], a["event_id"]) for a in actions if a["phase"] == "recover"}
    assert {(vm, started) for vm in by_fd[0 if started == first else 1]} <= recovered, \
        "recovered once Resource Graph (and IMDS) said it ended"
    assert drained_at_once(actions) == 1, "never more fault domains in maintenance than the limit"
    # The history keeps the transports apart and, for the control-plane hosts, how the event ended.
    assert_valid(captured)
    read_there = [r for r in captured.records if r.get("record", "observation") == "observation"
                  and r["host"] in on_control_plane]
    assert read_there and all(r.get("source") == "control_plane" for r in read_there)
    assert all("source" not in r for r in captured.records if r["host"] not in on_control_plane)
    assert any(e["EventId"] == started and e["EventStatus"] == "Completed" for r in read_there for e in r["events"])
    assert [r.get("source") for r in captured.records if r.get("record") == "approval"
            and r["event_ids"] == [first]] == ["control_plane"]


def test_the_approve_playbook_stops_in_one_sentence_before_reading_a_control_plane_host(tmp_path: Path) -> None:
    """Only the cycle reads through the control plane yet: the approve playbook would read the VM's IMDS, where a
    control-plane host never answers."""
    fleet = LiveFleet(None, time_scale=10.0, fleet=FleetSpec(vms=2, fault_domains=1))
    try:
        bench = CycleBench(fleet, tmp_path, control_plane=[fleet.vms[0]])
        run = bench.run("approve", extra={"event_ids": "00000000-0000-0000-0000-000000000000"})
    finally:
        fleet.close()
    assert run.returncode != 0 and "Traceback" not in run.stdout + run.stderr
    assert (f"The approve playbook reads every host through its IMDS, and {fleet.vms[0]} uses "
            "maintenance_cycle_transport control_plane") in run.stdout, run.stdout[-3000:]
    assert fleet.approvals() == [] and "PLAY [Approve Azure Scheduled Events]" not in run.stdout, \
        "stopped before any host was read"
