"""The maintenance cycle over both transports at once, by real ansible-playbook against the simulator over HTTPS (a
test CA): half the hosts read and approved through IMDS, half through the control plane (Resource Graph, then a
Microsoft.Maintenance acknowledge) with their VMs never contacted (their IMDS URL is a closed port, so any request
there fails the run) and their state kept on the controller. One plan over both: one fault domain at a time, events
seen by both transports are one event, approved once from their leader's transport; a control-plane host is
recovered when Resource Graph says Completed. Judged by what the simulator and the drain ledger recorded."""
from __future__ import annotations

import json
import re
import sqlite3
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
    # Time scale 5: 720 s of notice, Started for 30 s. The deferred event must be approved by the third cycle before
    # its NotBefore is near (prepare_anyway_seconds: 480 s, 96 s of wall time), when it would be prepared late and
    # left to NotBefore: 624 s for three cycles, which on a machine loaded by the rest of make test take over 200 s.
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
        (first,) = fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 3600, "started_for_s": 150,
                                 "resources": {"names": by_fd[0]}})
        (second,) = fleet.inject({"key": "fd1", "type": "Reboot", "notice_s": 3600, "started_for_s": 150,
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


def test_a_job_with_a_fresh_home_still_owes_the_recover_its_state_store_keeps(tmp_path: Path) -> None:
    """Issue 43, finding 2: an AWX job starts with a fresh home. Job 1 drains and approves vm-a's fault domain
    (a control-plane host: the write-ahead is the controller's); its event completes; job 2, with another home
    and the same SQLite store, still owes vm-a's recover and runs it before it drains vm-b's fault domain. Kept under
    the home (the old place), job 2 saw no recover owed, and drained and approved vm-b beside vm-a. A job that
    keeps the default store, under its home, stops before any read (the AWX refusal)."""
    ca, cert, key = certificate_chain(tmp_path)
    # Time scale 5: 360 s of notice, so that no event starts by itself; Started for 30 s.
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=2, fault_domains=2), simulate_impact=False,
                      certfile=str(cert), keyfile=str(key), control_plane_tokens={"t-operator": [CONTRIBUTOR]},
                      control_plane_clients={"operator-app": {"secret": "operator-secret", "token": "t-operator"}})
    store = tmp_path / "store" / "state.db"
    under_home = {"maintenance_cycle_state_store": "sqlite://%s" % store,  # what an AWX user sets (to PostgreSQL)
                  # the role's defaults, which the bench moves out of the home: the job's home is what is lost
                  "maintenance_cycle_control_plane_state_dir": "~/.ansible/azure_imds_scheduled_events/control_plane",
                  "maintenance_cycle_vm_memory": "~/.ansible/azure_imds_scheduled_events/vms-azure_vms.json"}
    try:
        vm_a, vm_b = sorted(fleet.vms, key=lambda name: next(v.fault_domain for v in fleet.engine.fleet.vms
                                                            if v.name == name))
        bench = CycleBench(fleet, tmp_path, control_plane=fleet.vms)
        env = {"AZURE_CLIENT_ID": "operator-app", "AZURE_SECRET": "operator-secret", "AZURE_TENANT": "contoso",
               "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000000",
               "AZURE_CLOUD_ENVIRONMENT": fleet.sim.base_url, "REQUESTS_CA_BUNDLE": str(ca), "SSL_CERT_FILE": str(ca)}
        (first,) = fleet.inject({"key": "a", "type": "Reboot", "notice_s": 1800, "started_for_s": 150,
                                 "resources": {"names": [vm_a]}})
        default_store = {k: v for k, v in under_home.items() if k != "maintenance_cycle_state_store"}
        job_0 = bench.run(env=dict(env, HOME=str(tmp_path / "job-0")), extra=dict(default_store, awx_job_id=41))
        assert job_0.returncode != 0 and "Traceback" not in job_0.stdout + job_0.stderr
        assert ("This run is AWX job 41 and keeps its state store under the job's home (%s/.ansible/"
                % (tmp_path / "job-0")) in job_0.stdout, job_0.stdout[-3000:]
        assert "set maintenance_cycle_state_store to a PostgreSQL URL" in job_0.stdout
        assert not (tmp_path / "job-0" / ".ansible" / "azure_imds_scheduled_events").exists() \
            and fleet.approvals() == [], "refused before any read"
        job_1 = bench.run(env=dict(env, HOME=str(tmp_path / "job-1")), extra=dict(under_home, awx_job_id=42))
        assert job_1.returncode == 0, job_1.stdout[-4000:]
        assert [a["accepted"] for a in fleet.approvals()] == [True], "job 1 approved vm-a's event"
        deadline = time.monotonic() + 120
        while {e["event_id"]: e["status"] for e in fleet.truth()}[first] == "Started" and time.monotonic() < deadline:
            time.sleep(1)
        fleet.inject({"key": "b", "type": "Reboot", "notice_s": 1800, "started_for_s": 150,
                      "resources": {"names": [vm_b]}})
        job_2 = bench.run(env=dict(env, HOME=str(tmp_path / "job-2")), extra=dict(under_home, awx_job_id=43))
        assert job_2.returncode == 0, job_2.stdout[-4000:]
        approved = [a["event_ids"] for a in fleet.approvals() if a["accepted"]]
    finally:
        fleet.close()
    fd_of = {vm.name: str(vm.fault_domain) for vm in fleet.engine.fleet.vms}
    actions = [dict(a, fd=fd_of[a["host"]]) for a in bench.actions()]
    assert [(a["phase"], a["host"]) for a in actions] == [("prepare", vm_a), ("recover", vm_a)], \
        "job 2 owed vm-a's recover (its fault domain held until the next cycle), and drained no other"
    assert drained_at_once(actions) == 1 and approved == [[first]], "never more fault domains than the limit"
    assert not list((tmp_path / "job-1").glob(".ansible/azure_imds_scheduled_events/**/*.json")), \
        "nothing the next job needs was kept in the job's home"
    with sqlite3.connect(str(store)) as db:  # finding 12: the memory of VMs (split sets too) is the store's
        memory = json.loads(db.execute("SELECT text FROM azure_imds_scheduled_events_memory WHERE key = 'azure_vms'")
                            .fetchone()[0])
    assert sorted(memory["vms"]) == sorted([vm_a, vm_b])
