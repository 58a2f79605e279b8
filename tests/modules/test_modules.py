"""Both modules, run by real ansible-playbook on simulated VMs over real HTTP."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

from imds_simulator.fleet import FleetSpec
from tests.modules.harness import LiveFleet, approve, info, leader_approves, play


SCENARIO_EXPECTATIONS = {
    # scenario: (event type, source, status when first seen, time scale). Each scale keeps the first event as first
    # seen (until its NotBefore, its cancellation or the end of its Started window) for about 300 s of wall time:
    # minutes more than the one ansible-playbook run over every scenario's VMs needs on a loaded machine.
    "platform-maintenance": ("Reboot", "Platform", "Scheduled", 3.0),    # 900 s notice
    "live-migration": ("Freeze", "Platform", "Scheduled", 3.0),          # 900 s notice
    "user-reboot": ("Reboot", "User", "Scheduled", 3.0),                 # 900 s notice
    "user-redeploy": ("Redeploy", "User", "Scheduled", 2.0),             # 600 s notice
    "spot-eviction": ("Preempt", "Platform", "Scheduled", 0.125),        # 30 s notice (it appears 40 s in)
    "scale-in": ("Terminate", "User", "Scheduled", 2.0),                 # 600 s notice
    "hardware-failure": ("Reboot", "Platform", "Started", 1.5),          # Started for 480 s at least
    "cancelled-maintenance": ("Reboot", "Platform", "Scheduled", 0.8),   # cancelled 240 s in at the earliest
    "degraded-hardware": ("Redeploy", "Platform", "Scheduled", 10.0),    # a week's notice
    "live-migration-replay": ("Freeze", "Platform", "Scheduled", 3.0),   # 900 s notice
}


def read_vms(vms: List[str], listed: List[str]) -> List[str]:
    """A VM the event lists and one it does not (where the fleet has one): what tells the two apart is the same on
    every other VM, and each host read costs a module run (docs/lab/benchmarks.md, the test suite's cost)."""
    return [next(vm for vm in vms if vm in listed)] + [vm for vm in vms if vm not in listed][:1]


def test_info_reads_every_scenario_type(tmp_path: Path) -> None:
    """Every scenario's fleet at once, read by one ansible-playbook run (each run starts Ansible again): the
    inventory names each VM by its scenario, the module names it by its compute metadata."""
    fleets = {scenario: LiveFleet(scenario, time_scale=expected[3], simulate_impact=False)
              for scenario, expected in SCENARIO_EXPECTATIONS.items()}
    try:
        for live in fleets.values():  # the spot eviction's event comes last, 40 s in (5 s at its time scale)
            live.wait_for_events(timeout=60.0)
        truths = {scenario: live.truth()[0] for scenario, live in fleets.items()}
        read = {scenario: read_vms(live.vms, truths[scenario]["resources"]) for scenario, live in fleets.items()}
        urls = {f"{scenario}.{vm}": fleets[scenario].url(vm) for scenario, vms in read.items() for vm in vms}
        run = play(tmp_path, None, [("read", info())], urls=urls, env={"ANSIBLE_FORKS": str(len(urls))})
    finally:
        for live in fleets.values():
            live.close()
    assert run.returncode == 0, run.stdout
    assert sum(len(vms) == 2 for vms in read.values()) >= 8, "most scenarios leave a VM out of their event"
    for scenario, live in fleets.items():
        event_type, source, status, _ = SCENARIO_EXPECTATIONS[scenario]
        truth = truths[scenario]
        for vm in read[scenario]:
            result = run.of(f"{scenario}.{vm}", "read")
            (event,) = result["events"]
            assert (event["event_type"], event["event_source"], event["event_status"]) == (event_type, source, status), \
                scenario
            assert event["event_id"] == truth["event_id"], scenario
            assert event["affects_this_vm"] is (vm in truth["resources"]), scenario
            assert [e["event_id"] for e in result["events_for_this_vm"]] == \
                ([truth["event_id"]] if vm in truth["resources"] else []), scenario
            assert result["this_vm"]["name"] == vm and result["changed"] is False, scenario
            if status == "Scheduled":
                assert event["seconds_to_not_before"] > 0 and event["not_before"].endswith("Z"), scenario
            else:
                assert event["not_before"] is None and event["seconds_to_not_before"] is None, scenario


@pytest.mark.core_line
def test_one_approval_from_the_leader_starts_the_event_for_every_listed_vm(tmp_path: Path, fleet: LiveFleet) -> None:
    truth = fleet.truth()[0]
    leader, other = truth["resources"]
    run = play(tmp_path, fleet, [
        ("read", info()),
        leader_approves(leader),
        ("after", info(previous="{{ r_read }}")),
    ], hosts=[leader, other, "avset-web-vm1"])
    assert run.returncode == 0, run.stdout
    assert run.of(leader, "approve")["approved"] == [truth["event_id"]] and run.of(leader, "approve")["changed"]
    (entry,) = fleet.approvals()
    assert (entry["vm"], entry["event_ids"], entry["in_resources"]) == (leader, [truth["event_id"]], {truth["event_id"]: True})
    for vm in (other, "avset-web-vm1"):  # every VM of the set sees it Started
        after = run.of(vm, "after")
        assert after["events"][0]["event_status"] == "Started"
        assert [e["event_id"] for e in after["diff"]["started"]] == [truth["event_id"]]


@pytest.mark.core_line
def test_check_mode_sends_nothing_but_reports_what_it_would(tmp_path: Path, fleet: LiveFleet) -> None:
    leader = fleet.truth()[0]["resources"][0]
    run = play(tmp_path, fleet, [("read", info()), ("approve", approve(events="{{ r_read.events_for_this_vm }}"))],
               hosts=[leader], check=True, diff=True)
    result = run.of(leader, "approve")
    assert result["changed"] is True and len(result["approved"]) == 1
    assert "would be approved" in result["diff"]["after"]
    assert fleet.approvals() == []
    assert fleet.truth()[0]["status"] == "Scheduled"


def test_approving_an_event_that_does_not_list_this_vm_is_refused_unless_forced(tmp_path: Path, fleet: LiveFleet) -> None:
    event_id = fleet.truth()[0]["event_id"]
    run = play(tmp_path, fleet, [
        ("refused", approve(event_ids=[event_id])),
        ("forced", approve(event_ids=[event_id], force=True)),
    ], hosts=["avset-web-vm1"])
    refused = run.of("avset-web-vm1", "refused")
    assert refused["failed"] and refused["refused"] == [event_id] and refused["approved"] == []
    assert "does not list this VM (avset-web-vm1) in Resources" in refused["msg"]
    assert run.of("avset-web-vm1", "forced")["approved"] == [event_id]
    (entry,) = fleet.approvals()
    assert entry["in_resources"] == {event_id: False}


def test_missing_started_and_moved_document(tmp_path: Path, fleet: LiveFleet) -> None:
    truth = fleet.truth()[0]
    leader = truth["resources"][0]
    ghost = "00000000-0000-0000-0000-000000000000"
    run = play(tmp_path, fleet, [
        ("moved", approve(event_ids=[truth["event_id"]], expected_incarnation=999)),
        ("missing", approve(event_ids=[truth["event_id"], ghost])),
        ("ignore", approve(event_ids=[truth["event_id"], ghost], missing="ignore", wait_for_start=True,
                           wait_timeout=10, poll_interval=0.2)),
        ("again", approve(event_ids=[truth["event_id"]])),
    ], hosts=[leader])
    moved, missing = run.of(leader, "moved"), run.of(leader, "missing")
    assert moved["failed"] and "the document moved on" in moved["msg"]
    assert missing["failed"] and missing["missing"] == [ghost] and "nothing was approved" in missing["msg"]
    ignore = run.of(leader, "ignore")
    assert ignore["approved"] == [truth["event_id"]] and ignore["started"] == [truth["event_id"]]
    again = run.of(leader, "again")
    assert again["changed"] is False and again["already_started"] == [truth["event_id"]]
    assert len(fleet.approvals()) == 1  # only the one real POST


def test_wait_for_change_returns_when_the_incarnation_moves(tmp_path: Path, changing_fleet: LiveFleet) -> None:
    fleet = changing_fleet
    truth = fleet.truth()[0]
    leader = truth["resources"][0]
    run = play(tmp_path, fleet, [
        ("read", info()),
        # Whenever the read lands (before the start, during it, after), a later change comes within 180 s.
        ("wait", info(previous="{{ r_read }}", wait_for_change=True, wait_timeout=180, poll_interval=0.2)),
        ("quiet", info(wait_for_change=True, since_incarnation="{{ r_wait.document_incarnation }}",
                       wait_timeout=0.5, poll_interval=0.2)),
    ], hosts=["avset-web-vm1"], env={})
    del leader
    waited = run.of("avset-web-vm1", "wait")
    assert waited["waited"]["changed"] is True
    assert waited["document_incarnation"] > run.of("avset-web-vm1", "read")["document_incarnation"]
    assert waited["diff"]["changed"] is True
    quiet = run.of("avset-web-vm1", "quiet")
    # Unchanged at the timeout is not an error. (How many polls fit in 0.5 s depends on the machine's load; the
    # polling loop itself is a unit test on a virtual clock.)
    assert quiet["failed"] is False and quiet["waited"]["changed"] is False and quiet["waited"]["polls"] >= 1


def test_proxy_variables_pointing_nowhere_change_nothing(tmp_path: Path, fleet: LiveFleet) -> None:
    proxy = "http://127.0.0.1:9"
    task = dict(info(), environment={"http_proxy": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy,
                                     "all_proxy": proxy, "no_proxy": ""})
    run = play(tmp_path, fleet, [("read", task)], hosts=["avset-web-vm0"])
    assert run.of("avset-web-vm0", "read")["failed"] is False
    assert fleet.sim.violations == []


FAULTS = {
    "avset-web-vm0": [{"kind": "status", "status": 410, "count": 2}],
    "avset-web-vm1": [{"kind": "status", "status": 429}],
    "avset-web-vm2": [{"kind": "status", "status": 500}, {"kind": "status", "status": 503}],
    "avset-web-vm3": [{"kind": "drop"}, {"kind": "reset_mid_body"}],
    "avset-web-vm4": [{"kind": "delay", "delay_s": 4.5, "path": "any"}, {"kind": "delay", "delay_s": 4.5}],
    "avset-web-vm5": [{"kind": "status", "status": 503, "count": 1, "path": "compute"}],
}


def test_every_retryable_fault_is_retried_then_succeeds(tmp_path: Path, fleet: LiveFleet) -> None:
    for vm, faults in FAULTS.items():
        fleet.fault(vm, *faults)
    # The delays fall on each endpoint's first call: longer than the timeout, within the first-call budget. The
    # timeout is long enough for a plain answer on a loaded machine (a retry's answer must come within it).
    run = play(tmp_path, fleet, [("read", info(timeout=3, first_call_timeout=15))])
    assert run.returncode == 0, run.stdout
    for vm in FAULTS:
        result = run.of(vm, "read")
        assert result["failed"] is False and result["document_incarnation"] >= 2, (vm, result)
    assert fleet.sim.faults.pending() == {}  # every fault was met


BAD_ANSWERS = {
    "avset-web-vm0": ({"kind": "status", "status": 503, "count": -1}, "HTTP 503: Injected fault: HTTP 503 (gave up after 2 attempts)."),
    "avset-web-vm1": ({"kind": "malformed_json"}, "IMDS answered with malformed JSON"),
    "avset-web-vm2": ({"kind": "wrong_shape"}, "is not a Scheduled Events document"),
    "avset-web-vm3": ({"kind": "non_utf8"}, "IMDS answered with bytes that are not UTF-8 text."),
    "avset-web-vm4": ({"kind": "redirect"}, "IMDS clients never follow redirects."),
    "avset-web-vm5": ({"kind": "body", "status": 404, "body": json.dumps({"error": "Not found"})}, "with HTTP 404: Not found."),
}


@pytest.mark.core_line
def test_unrecoverable_answers_fail_with_one_sentence_and_no_traceback(tmp_path: Path, fleet: LiveFleet) -> None:
    for vm, (fault, _) in BAD_ANSWERS.items():
        fleet.fault(vm, fault)
    run = play(tmp_path, fleet, [("read", info(retries=1))])
    for vm, (_, message) in BAD_ANSWERS.items():
        result = run.of(vm, "read")
        assert result["failed"] is True and message in result["msg"], (vm, result["msg"])
        assert "Traceback" not in json.dumps(result) and "\n" not in result["msg"]
    assert "Traceback" not in run.stdout + run.stderr
    assert fleet.sim.redirects_followed == []


def test_first_call_delay_is_survived_with_the_first_call_budget(tmp_path: Path) -> None:
    live = LiveFleet("platform-maintenance", first_call_delay_s=1.5)
    try:
        run = play(tmp_path, live, [("read", info(timeout=0.5, first_call_timeout=10, retries=0))],
                   hosts=["avset-web-vm0"])
    finally:
        live.close()
    assert run.of("avset-web-vm0", "read")["failed"] is False


@pytest.mark.core_line
def test_empty_body_is_no_document_yet_with_a_warning(tmp_path: Path, fleet: LiveFleet) -> None:
    fleet.fault("avset-web-vm0", {"kind": "empty_body"})
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"])
    result = run.of("avset-web-vm0", "read")
    assert result["failed"] is False and result["document_available"] is False
    assert result["document_incarnation"] is None and result["events"] == []
    assert any("no Scheduled Events document yet" in w for w in result["warnings"])


def test_unknown_event_type_is_kept_and_warned_about(tmp_path: Path, fleet: LiveFleet) -> None:
    body = {"DocumentIncarnation": 7, "Events": [{
        "EventId": "11111111-2222-3333-4444-555555555555", "EventStatus": "Scheduled", "EventType": "Hibernate",
        "ResourceType": "VirtualMachine", "Resources": ["avset-web-vm0"], "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT"}]}
    fleet.fault("avset-web-vm0", {"kind": "body", "status": 200, "body": json.dumps(body)})
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"])
    result = run.of("avset-web-vm0", "read")
    (event,) = result["events"]
    assert (event["event_type"], event["known_type"], event["affects_this_vm"]) == ("Hibernate", False, True)
    assert any("unknown EventType 'Hibernate'" in w for w in result["warnings"])


@pytest.mark.core_line
def test_bad_options_fail_before_anything_is_sent(tmp_path: Path, fleet: LiveFleet) -> None:
    run = play(tmp_path, fleet, [
        ("version", info(api_version="2016-01-01")),
        ("url", info(imds_url="ftp://169.254.169.254")),
        ("ids", approve(event_ids=[""])),
        ("both", approve(event_ids=["x"], events=[{"event_id": "x"}])),
    ], hosts=["avset-web-vm0"])
    messages = {task: run.of("avset-web-vm0", task)["msg"] for task in ("version", "url", "ids", "both")}
    assert messages["version"].startswith("api_version '2016-01-01' is not a Scheduled Events api-version")
    assert messages["url"] == "imds_url 'ftp://169.254.169.254' is not an http:// or https:// base URL."
    assert messages["ids"] == "event id '' is empty or not text."
    assert "mutually exclusive" in messages["both"]
    assert fleet.approvals() == []


def test_scale_set_instance_names_match_exactly(tmp_path: Path) -> None:
    live = LiveFleet(None, fleet=FleetSpec(kind="scale_set", name="vmss", vms=12, fault_domains=5))
    try:
        (event_id,) = live.inject({"key": "one", "type": "Reboot", "source": "User", "resources": {"names": ["vmss_1"]}})
        run = play(tmp_path, live, [("read", info())], hosts=["vmss_1", "vmss_10", "vmss_11"])
    finally:
        live.close()
    assert [e["event_id"] for e in run.of("vmss_1", "read")["events_for_this_vm"]] == [event_id]
    assert run.of("vmss_10", "read")["events_for_this_vm"] == []
    assert run.of("vmss_11", "read")["events_for_this_vm"] == []


def _oldest_target() -> "tuple[tuple[int, int], str]":
    """The oldest target Python the running ansible-core supports (3.8 on 2.19, 3.9 from 2.21; the
    collection's own floor is 3.8), and a working interpreter of it, or ''."""
    import glob
    import os
    import subprocess
    from ansible.module_utils import basic
    version = max((3, 8), tuple(getattr(basic, "_PY_MIN", (3, 8)))[:2])
    name = "python%d.%d" % version
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%d.%d*/bin/%s" % (*version, name))))
    candidates += [p for p in ("/usr/bin/" + name, "/usr/local/bin/" + name) if os.path.exists(p)]
    for path in candidates:
        probe = subprocess.run([path, "-c", "import sys; print(tuple(sys.version_info[:2]))"], capture_output=True,
                               text=True)
        if probe.returncode == 0 and probe.stdout.strip() == str(version):
            return version, path
    return version, ""


OLDEST_TARGET, OLDEST_PYTHON = _oldest_target()


@pytest.mark.core_line
def test_both_modules_run_on_the_oldest_supported_target(tmp_path: Path, answering_fleet: LiveFleet) -> None:
    fleet = answering_fleet
    # Required, not skipped: this image's pyenv has 3.8 and 3.9; a missing one is a failure to see.
    assert OLDEST_PYTHON, f"no Python {OLDEST_TARGET} interpreter (pyenv or /usr/bin) to act as the oldest target"
    leader = fleet.truth()[0]["resources"][0]
    run = play(tmp_path, fleet, [
        ("read", info()),
        ("approve", approve(events="{{ r_read.events_for_this_vm }}", wait_for_start=True, poll_interval=0.2)),
        ("after", info(previous="{{ r_read }}")),
    ], hosts=[leader], extra_vars={"ansible_python_interpreter": OLDEST_PYTHON})
    assert run.returncode == 0, run.stdout
    approved = run.of(leader, "approve")
    assert approved.get("started") == approved["approved"] != [], (run.of(leader, "read"), approved)
    assert run.of(leader, "after")["diff"]["started"] != []
    # and every file that runs on a VM compiles there
    import subprocess
    sources = [str(p) for p in (Path(__file__).parents[2] / "plugins").glob("module*/*.py")]
    compiled = subprocess.run([OLDEST_PYTHON, "-m", "py_compile", *sources], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr


def test_resource_name_overrides_the_compute_name(tmp_path: Path, fleet: LiveFleet) -> None:
    truth = fleet.truth()[0]
    listed = truth["resources"][1]
    run = play(tmp_path, fleet, [
        ("as_listed", info(include_instance=False, resource_name=listed.upper())),
        ("anonymous", info(include_instance=False)),
    ], hosts=["avset-web-vm1"])
    as_listed = run.of("avset-web-vm1", "as_listed")
    assert [e["event_id"] for e in as_listed["events_for_this_vm"]] == [truth["event_id"]]
    assert as_listed["this_vm"] == {"name": listed.upper()}
    anonymous = run.of("avset-web-vm1", "anonymous")
    assert anonymous["events"][0]["affects_this_vm"] is None and anonymous["events_for_this_vm"] == []
    assert any("name is unknown" in w for w in anonymous["warnings"])


@pytest.mark.core_line
def test_a_failed_approval_post_says_what_was_attempted(tmp_path: Path, fleet: LiveFleet) -> None:
    truth = fleet.truth()[0]
    leader = truth["resources"][0]
    fleet.fault(leader, {"kind": "status", "status": 503, "count": -1, "method": "POST"})
    run = play(tmp_path, fleet, [("approve", approve(event_ids=[truth["event_id"]], retries=1))], hosts=[leader])
    result = run.of(leader, "approve")
    assert result["failed"] is True and result["attempted"] == [truth["event_id"]] and result["approved"] == []
    assert "may or may not have reached IMDS" in result["msg"] and "HTTP 503" in result["msg"]
    assert fleet.approvals() == []  # the fault answered before the simulator's engine saw the POST
