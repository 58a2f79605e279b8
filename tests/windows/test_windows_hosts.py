"""Windows VMs: both modules and the role, over a PowerShell connection whose modules answer as on Windows.

The connection is the `windows_double` test double (tests/windows/connection_plugins): it stands in
for WinRM and a Windows host, the boundary this machine cannot reach. Everything else is real:
ansible-playbook, the action plugins, ansible.windows' own action plugins, and the simulator over HTTP.
Each Windows result is compared with the Linux result for the same simulated VM.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet
from tests.modules.harness import approve, info, play

# Keys that legitimately differ between two reads of the same VM through two transports.
PER_CALL = ("observed_at", "transport", "invocation", "warnings", "state_path", "seconds_to_not_before")


def one_event() -> LiveFleet:
    """Three VMs in two fault domains and one event, on fault domain 0's VMs: vm0 and vm2 (a leader and a follower);
    vm1 stays quiet, and nothing else happens (a next fault domain's event would add its work to the cycles). Time scale
    4: the 15-minute notice lasts 225 s, minutes more than two cycles of the mixed fleet need on a loaded machine
    (tests run in parallel); once approved, the event is Started for 135 s."""
    live = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(vms=3, fault_domains=2))
    first_domain = [vm.name for vm in live.engine.fleet.vms if vm.fault_domain == 0]
    live.inject({"key": "host-update", "type": "Reboot", "notice_s": 900, "started_for_s": 540,
                 "resources": {"names": first_domain}})
    return live


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    live = one_event()
    yield live
    live.close()


def comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in PER_CALL}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def imds_calls(tmp: Path) -> List[Dict[str, Any]]:
    log = tmp / "windows" / "windows_double_calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_info_on_windows_is_the_linux_result_through_win_uri(tmp_path: Path, fleet: LiveFleet) -> None:
    (event,) = fleet.truth()
    leader = event["resources"][0]
    # A dead proxy in the environment: both transports must go around it.
    run = play(tmp_path, fleet, [("read", info(state_path="~/.ansible/se/state.json"))], hosts=[leader],
               windows={"win-" + leader: leader}, env={"http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert run.returncode == 0, run.stdout
    linux, windows = run.of(leader, "read"), run.of("win-" + leader, "read")
    assert (linux["transport"], windows["transport"]) == ("module", "win_uri")
    assert comparable(windows) == comparable(linux)
    assert windows["events_for_this_vm"][0]["event_id"] == event["event_id"]
    assert windows["state_status"] == "missing" and windows["state_path"] == r"%USERPROFILE%\.ansible\se\state.json"
    calls = imds_calls(tmp_path)
    uris = [c for c in calls if c["module"] == "ansible.windows.win_uri"]
    assert {c["module"] for c in calls} == {"ansible.windows.win_uri", "ansible.windows.slurp"}
    assert {c["args"]["url"].split("?")[0].rsplit("/", 1)[-1] for c in uris} == {"compute", "scheduledevents"}
    for call in uris:
        assert call["args"]["headers"] == {"Metadata": "true"}
        assert (call["args"]["use_proxy"], call["args"]["follow_redirects"]) == (False, "none")


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    """One run on two Windows VMs: the outsider tries to approve an event that does not list it (refused, nothing
    sent), then the leader approves it, recording the ids at a state path of its own first."""
    tmp = tmp_path_factory.mktemp("approved")
    live = one_event()
    try:
        (event,) = live.truth()
        leader = event["resources"][0]
        outsider = next(vm for vm in live.vms if vm not in event["resources"])
        run = play(tmp, live, [
            ("read", info()),
            ("foreign", dict(approve(event_ids=[event["event_id"]]), when="inventory_hostname == %r" % outsider)),
            ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}",
                                     expected_incarnation="{{ r_read.document_incarnation }}",
                                     state_path=r"C:\ProgramData\se\state.json"),
                             when="inventory_hostname == %r" % leader)),
        ], hosts=[], windows={leader: leader, outsider: outsider})
        yield {"tmp": tmp, "run": run, "event": event, "leader": leader, "outsider": outsider,
               "approvals": live.approvals()}
    finally:
        live.close()


@pytest.mark.xdist_group("windows-approved")
def test_leader_on_windows_approves_once_and_the_rules_hold(approved: Dict[str, Any]) -> None:
    run, event, leader, outsider = approved["run"], approved["event"], approved["leader"], approved["outsider"]
    follower = event["resources"][1]
    assert run.returncode == 0, run.stdout
    assert run.of(leader, "approve")["approved"] == [event["event_id"]] and run.of(leader, "approve")["changed"]
    refused = run.of(outsider, "foreign")
    assert refused["failed"] and refused["refused"] == [event["event_id"]]
    assert "does not list this VM (%s)" % outsider in refused["msg"]
    (approval,) = approved["approvals"]
    assert (approval["vm"], approval["event_ids"]) == (leader, [event["event_id"]])
    assert follower not in {a["vm"] for a in approved["approvals"]}
    assert not [c for c in imds_calls(approved["tmp"]) if c["host"] == outsider and c["args"].get("method") == "POST"]


@pytest.mark.xdist_group("windows-approved")
def test_the_approve_task_on_windows_records_its_ids_on_the_vm_before_it_sends_them(approved: Dict[str, Any]) -> None:
    """The write-ahead is the task's own on every kind of host: Windows VMs had the role save the ids first instead
    (a step of its own, and a plan flag saying who records)."""
    tmp, event, leader = approved["tmp"], approved["event"], approved["leader"]
    result = approved["run"].of(leader, "approve")
    assert result["approved"] == [event["event_id"]] and result["recorded_in"] == r"C:\ProgramData\se\state.json"
    state = json.loads((tmp / "windows" / leader / "C" / "ProgramData" / "se" / "state.json").read_text())
    assert state["approved"] == [event["event_id"]]
    calls = [c for c in imds_calls(tmp) if c["host"] == leader]
    (post,) = [i for i, c in enumerate(calls) if c["args"].get("method") == "POST"]
    copies = [i for i, c in enumerate(calls) if c["module"] == "ansible.windows.win_copy"]  # its query, then the copy
    assert copies and max(copies) < post, "on record before it is sent"


# One run on one Windows VM, in this order: each bad input, an IMDS that does not answer, then a read and an approval
# in check mode. The VM's fleet is its own: nothing else approves its event.
BAD_INPUT = {
    "bad_timeout": ({"timeout": -1}, "timeout and first_call_timeout must be positive numbers of seconds."),
    "bad_url": ({"imds_url": "ftp://x"}, "is not an http:// or https:// base URL."),
    "bad_retries": ({"retries": "many"}, "retries"),
}
DEAD_IMDS = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def one_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("one-vm")
    live = one_event()
    try:
        vm = live.truth()[0]["resources"][0]
        tasks = [(name, info(**args)) for name, (args, _) in BAD_INPUT.items()]
        tasks += [("unreachable", info(imds_url=DEAD_IMDS, retries=1, first_call_timeout=2)),
                  ("read", info()),
                  ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}"), check_mode=True, diff=True))]
        run = play(tmp, live, tasks, hosts=[], windows={vm: vm})
        yield {"run": run, "vm": vm, "calls": imds_calls(tmp), "approvals": live.approvals()}
    finally:
        live.close()


@pytest.mark.xdist_group("windows-one-vm")
@pytest.mark.parametrize("task", sorted(BAD_INPUT))
def test_bad_input_on_windows_fails_in_one_sentence_without_a_request(one_vm: Dict[str, Any], task: str) -> None:
    result = one_vm["run"].of(one_vm["vm"], task)
    message = BAD_INPUT[task][1]
    assert result["failed"] and message in result["msg"] and "Traceback" not in result["msg"]
    # the bad inputs ran first: a request of theirs would come before the dead IMDS's two
    assert [c["args"].get("url", "").startswith(DEAD_IMDS + "/") for c in one_vm["calls"][:2]] == [True, True]


@pytest.mark.xdist_group("windows-one-vm")
def test_unreachable_imds_on_windows_retries_then_names_the_cause(one_vm: Dict[str, Any]) -> None:
    result = one_vm["run"].of(one_vm["vm"], "unreachable")
    assert result["failed"] and "cannot reach IMDS at %s" % DEAD_IMDS in result["msg"]
    assert "gave up after 2 attempts" in result["msg"]
    assert len([c for c in one_vm["calls"] if c["args"].get("url", "").startswith(DEAD_IMDS + "/")]) == 2


@pytest.mark.xdist_group("windows-one-vm")
def test_check_mode_on_windows_sends_no_approval(one_vm: Dict[str, Any]) -> None:
    result = one_vm["run"].of(one_vm["vm"], "approve")
    assert result["changed"] is True and "would be approved" in result["diff"]["after"]
    assert one_vm["approvals"] == []
    assert not [c for c in one_vm["calls"] if c["args"].get("method") == "POST"]


def test_without_ansible_windows_the_task_says_what_to_install(tmp_path: Path, fleet: LiveFleet) -> None:
    vm = fleet.vms[0]
    run = play(tmp_path, fleet, [("read", info())], hosts=[], windows={vm: vm},
               env={"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False"})  # hides the bundle's ansible.windows
    result = run.of(vm, "read")
    assert result["failed"] and "need the ansible.windows collection on the controller" in result["msg"]


# ----------------------------------------------------------------- the role, on a mixed fleet

@pytest.fixture
def mixed(tmp_path: Path, fleet: LiveFleet) -> CycleBench:
    """vm0 and vm1 are Windows VMs, one of each fault domain: the first event lists vm0 (Windows) and vm2 (Linux),
    and vm1 (Windows) is quiet."""
    return CycleBench(fleet, tmp_path, windows=fleet.vms[:2])


def test_a_mixed_fleet_cycles_through_prepare_approve_and_recover(mixed: CycleBench) -> None:
    fleet = mixed.fleet
    (event,) = fleet.truth()
    assert set(event["resources"]) & mixed.windows and set(event["resources"]) - mixed.windows
    first = mixed.run()
    assert first.returncode == 0, first.stdout[-3000:]
    assert {a["host"] for a in mixed.actions("prepare")} == set(event["resources"])
    (approval,) = fleet.approvals()
    assert approval["vm"] == event["resources"][0] and approval["event_ids"] == [event["event_id"]]
    listed = set(event["resources"])
    for host in listed:  # saved on every VM the event lists; the Windows ones at the role's default path
        assert mixed.state(host)["events"] and mixed.state(host)["version"] == 2
    assert all(mixed.state(h) is None for h in set(mixed.hosts) - listed), "the others are quiet: one read each"
    deadline_removed(fleet, event["event_id"])
    last = mixed.run()
    assert last.returncode == 0, last.stdout[-3000:]
    assert {a["host"] for a in mixed.actions("recover")} == listed
    # the event is forgotten once recovered
    assert all(event["event_id"] not in {e["event_id"] for e in mixed.state(h)["events"]} for h in listed)
    modules = {c["module"] for c in mixed.windows_calls()}
    assert modules == {"ansible.windows.win_uri", "ansible.windows.slurp", "ansible.windows.win_file",
                       "ansible.windows.win_copy"}


# Idempotence, on Linux and Windows VMs at once (it had a Linux-only run of its own as well): a second cycle
# without any change in IMDS changes nothing and prepares nothing again.
# The event's own VMs only: a quiet VM writes nothing in either cycle (the test above), so it would add its reads alone.
def test_a_second_cycle_without_imds_change_changes_nothing_on_linux_or_windows(tmp_path: Path,
                                                                                fleet: LiveFleet) -> None:
    (listed,) = [event["resources"] for event in fleet.truth()]
    mixed = CycleBench(fleet, tmp_path, hosts=listed, windows=[vm for vm in fleet.vms[:2] if vm in listed])
    policy = {"maintenance_cycle_leave_to_not_before": ["Reboot"]}  # the event stays Scheduled between runs
    first = mixed.run(extra=policy)
    assert first.returncode == 0 and first.changed() > 0, first.stdout[-3000:]
    (event,) = mixed.fleet.truth()
    assert event["status"] == "Scheduled", "the notice must outlast both runs"
    assert set(event["resources"]) & mixed.windows and set(event["resources"]) - mixed.windows
    second = mixed.run(extra=policy)
    assert second.returncode == 0 and second.changed() == 0, second.recap
    assert "policy leaves Reboot events to NotBefore" in second.stdout
    assert sorted(a["host"] for a in mixed.actions("prepare")) == sorted(event["resources"]), "prepared once, not again"


def deadline_removed(fleet: LiveFleet, event_id: str, timeout: float = 300.0) -> None:
    import time
    deadline = time.monotonic() + timeout
    while any(e["event_id"] == event_id and e["status"] != "Removed" for e in fleet.truth()):
        assert time.monotonic() < deadline, "the event did not complete"
        time.sleep(0.5)


def test_a_state_file_on_windows_that_is_not_text_is_left_alone_and_reported_as_busy(tmp_path: Path,
                                                                                     fleet: LiveFleet) -> None:
    """Not a first cycle: the file may owe recovers, so the warning says the VM counts as busy and how to move the
    file aside (check mode: the file and the approvals are untouched whatever the code; the busy rule itself is
    test_plan.py's test_regression_a_damaged_state_is_kept_and_its_host_is_busy). The quiet Windows VM alone: the
    file is read whether or not an event lists the VM."""
    host = fleet.vms[1]
    mixed = CycleBench(fleet, tmp_path, hosts=[host], windows=[host])
    path = mixed.state_path(host)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe not text")
    run = mixed.run(check=True)
    assert run.returncode == 0, run.stdout[-3000:]
    said = run.stdout + run.stderr
    assert "cannot read the state file" in said and "not UTF-8" in said and "counts this VM as busy" in said
    assert path.read_bytes() == b"\xff\xfe not text", "check mode leaves the file alone"
    assert mixed.fleet.approvals() == []
