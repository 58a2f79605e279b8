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

from tests.integration.runner import CycleBench
from tests.live_fleet import SMALL_SET, LiveFleet
from tests.modules.harness import approve, info, play

# Keys that legitimately differ between two reads of the same VM through two transports.
PER_CALL = ("observed_at", "transport", "invocation", "warnings", "state_path", "seconds_to_not_before")


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    """Platform maintenance at time scale 4: a 15-minute notice lasts 225-255 s, minutes more than two cycles of the
    mixed fleet need on a loaded machine (tests run in parallel); the event is then Started for 135-165 s."""
    live = LiveFleet("platform-maintenance", time_scale=4.0, seed=3, fleet=SMALL_SET)
    live.wait_for_events(timeout=10.0)
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


def test_leader_on_windows_approves_once_and_the_rules_hold(tmp_path: Path, fleet: LiveFleet) -> None:
    (event,) = fleet.truth()
    leader, follower = event["resources"]
    outsider = next(vm for vm in fleet.vms if vm not in event["resources"])
    run = play(tmp_path, fleet, [
        ("read", info()),
        # First the outsider tries to approve an event that does not list it: refused, nothing sent.
        ("foreign", dict(approve(event_ids=[event["event_id"]]), when="inventory_hostname == %r" % outsider)),
        ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}",
                                 expected_incarnation="{{ r_read.document_incarnation }}"),
                         when="inventory_hostname == %r" % leader)),
    ], hosts=[], windows={leader: leader, outsider: outsider})
    assert run.returncode == 0, run.stdout
    assert run.of(leader, "approve")["approved"] == [event["event_id"]] and run.of(leader, "approve")["changed"]
    refused = run.of(outsider, "foreign")
    assert refused["failed"] and refused["refused"] == [event["event_id"]]
    assert "does not list this VM (%s)" % outsider in refused["msg"]
    (approval,) = fleet.approvals()
    assert (approval["vm"], approval["event_ids"]) == (leader, [event["event_id"]])
    assert follower not in {a["vm"] for a in fleet.approvals()}


def test_the_approve_task_on_windows_records_its_ids_on_the_vm_before_it_sends_them(tmp_path: Path,
                                                                                    fleet: LiveFleet) -> None:
    """The write-ahead is the task's own on every kind of host: Windows VMs had the role save the ids first instead
    (a step of its own, and a plan flag saying who records)."""
    (event,) = fleet.truth()
    leader = event["resources"][0]
    run = play(tmp_path, fleet, [
        ("read", info()),
        ("approve", approve(events="{{ r_read.events_for_this_vm }}", state_path=r"C:\ProgramData\se\state.json")),
    ], hosts=[], windows={leader: leader})
    result = run.of(leader, "approve")
    assert result["approved"] == [event["event_id"]] and result["recorded_in"] == r"C:\ProgramData\se\state.json"
    state = json.loads((tmp_path / "windows" / leader / "C" / "ProgramData" / "se" / "state.json").read_text())
    assert state["approved"] == [event["event_id"]]
    calls = imds_calls(tmp_path)
    (post,) = [i for i, c in enumerate(calls) if c["args"].get("method") == "POST"]
    copies = [i for i, c in enumerate(calls) if c["module"] == "ansible.windows.win_copy"]  # its query, then the copy
    assert copies and max(copies) < post, "on record before it is sent"


def test_check_mode_on_windows_sends_no_approval(tmp_path: Path, fleet: LiveFleet) -> None:
    leader = fleet.truth()[0]["resources"][0]
    run = play(tmp_path, fleet, [("read", info()), ("approve", approve(events="{{ r_read.events_for_this_vm }}"))],
               hosts=[], windows={leader: leader}, check=True, diff=True)
    result = run.of(leader, "approve")
    assert result["changed"] is True and "would be approved" in result["diff"]["after"]
    assert fleet.approvals() == []
    assert not [c for c in imds_calls(tmp_path) if c["args"].get("method") == "POST"]


@pytest.mark.parametrize("args, message", [
    ({"timeout": -1}, "timeout and first_call_timeout must be positive numbers of seconds."),
    ({"imds_url": "ftp://x"}, "is not an http:// or https:// base URL."),
    ({"retries": "many"}, "retries"),
])
def test_bad_input_on_windows_fails_in_one_sentence_without_a_request(tmp_path: Path, fleet: LiveFleet,
                                                                      args: Dict[str, Any], message: str) -> None:
    vm = fleet.vms[0]
    run = play(tmp_path, fleet, [("read", info(**args))], hosts=[], windows={vm: vm})
    result = run.of(vm, "read")
    assert result["failed"] and message in result["msg"] and "Traceback" not in result["msg"]
    assert imds_calls(tmp_path) == []


def test_unreachable_imds_on_windows_retries_then_names_the_cause(tmp_path: Path, fleet: LiveFleet) -> None:
    vm = fleet.vms[0]
    run = play(tmp_path, fleet, [("read", info(imds_url="http://127.0.0.1:9", retries=1, first_call_timeout=2))],
               hosts=[], windows={vm: vm})
    result = run.of(vm, "read")
    assert result["failed"] and "cannot reach IMDS at http://127.0.0.1:9" in result["msg"]
    assert "gave up after 2 attempts" in result["msg"]
    assert len(imds_calls(tmp_path)) == 2


def test_without_ansible_windows_the_task_says_what_to_install(tmp_path: Path, fleet: LiveFleet) -> None:
    vm = fleet.vms[0]
    run = play(tmp_path, fleet, [("read", info())], hosts=[], windows={vm: vm},
               env={"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False"})  # hides the bundle's ansible.windows
    result = run.of(vm, "read")
    assert result["failed"] and "need the ansible.windows collection on the controller" in result["msg"]


# ----------------------------------------------------------------- the role, on a mixed fleet

@pytest.fixture
def mixed(tmp_path: Path, fleet: LiveFleet) -> CycleBench:
    """Half the VMs are Windows VMs, one of each fault domain: each event has one of each."""
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
    # the event is forgotten once recovered (the next fault domain's event may be listed by then: a set's VMs all
    # see it, and a loaded machine's run can read after it appears)
    assert all(event["event_id"] not in {e["event_id"] for e in mixed.state(h)["events"]} for h in listed)
    modules = {c["module"] for c in mixed.windows_calls()}
    assert modules == {"ansible.windows.win_uri", "ansible.windows.slurp", "ansible.windows.win_file",
                       "ansible.windows.win_copy"}


# Idempotence, on Linux and Windows VMs at once (it had a Linux-only run of its own as well): a second cycle
# without any change in IMDS changes nothing and prepares nothing again.
def test_a_second_cycle_without_imds_change_changes_nothing_on_linux_or_windows(mixed: CycleBench) -> None:
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


def test_a_state_file_on_windows_that_is_not_text_is_left_alone_and_reported_as_busy(mixed: CycleBench) -> None:
    """Not a first cycle: the file may owe recovers, so the warning says the VM counts as busy and how to move the
    file aside (check mode: the file and the approvals are untouched whatever the code; the busy rule itself is
    test_plan.py's test_regression_a_damaged_state_is_kept_and_its_host_is_busy)."""
    host = sorted(mixed.windows)[0]
    path = mixed.state_path(host)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe not text")
    run = mixed.run(check=True)
    assert run.returncode == 0, run.stdout[-3000:]
    said = run.stdout + run.stderr
    assert "cannot read the state file" in said and "not UTF-8" in said and "counts this VM as busy" in said
    assert path.read_bytes() == b"\xff\xfe not text", "check mode leaves the file alone"
    assert mixed.fleet.approvals() == []
