"""scheduled_events_info's main(), on the simulator over real HTTP: it reads and changes nothing (the _info
convention), in check mode or not; it reads every scenario's event type as served; it retries every retryable fault,
and every answer it cannot use, like a bad option, fails in one sentence; a wait for change ends when the document
moves on. One real ansible-playbook run per behaviour is tests/modules/test_modules.py's."""
from __future__ import annotations

import json
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_info

from ...simulated_imds import QUIET, FleetSpec, Simulator, fault, inject, own_fleet, sc, serve
from .module_runner import run

VM = "avset-web-vm0"


def info(sim: Simulator, check_mode: bool = False, vm: str = VM, **args: Any) -> Dict[str, Any]:
    return run(scheduled_events_info, dict({"imds_url": sim.vm_url(vm), "retries": 0}, **args), check_mode)


def files_under(root: Path) -> Dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("check_mode", [False, True])
def test_it_reads_events_and_the_state_file_and_writes_nothing(sim: Simulator, tmp_path: Path,
                                                               check_mode: bool) -> None:
    event_id = inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"version": 2, "document_incarnation": 1, "events": [], "approved": []}))
    before = files_under(tmp_path)
    result = info(sim, check_mode, state_path=str(state))
    assert result["failed"] is False and result["changed"] is False
    assert [e["event_id"] for e in result["events_for_this_vm"]] == [event_id]
    assert result["state_status"] == "loaded" and [e["event_id"] for e in result["diff"]["new"]] == [event_id]
    assert result["quiet"] is False and "lock" not in result
    assert files_under(tmp_path) == before, "an _info module changes nothing on the VM"
    assert sim.violations == []


def test_a_vm_without_events_or_state_is_quiet(sim: Simulator, tmp_path: Path) -> None:
    result = info(sim, state_path=str(tmp_path / "none" / "state.json"))
    assert result["quiet"] is True and result["state_status"] == "missing" and "warnings" not in result
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("args, fragment", [
    ({"lock_path": "/tmp/x.lock"}, "Unsupported parameters"),  # the lock is scheduled_events_lock's
    ({"wait_timeout": -1}, "wait_timeout must be 0 or more"),
    ({"poll_interval": 0}, "poll_interval positive"),
    ({"api_version": "2016-01-01"}, "api_version '2016-01-01' is not a Scheduled Events api-version"),
    ({"imds_url": "ftp://169.254.169.254"}, "imds_url 'ftp://169.254.169.254' is not an http:// or https:// base URL."),
])
def test_bad_options_fail_in_one_sentence_before_imds_is_asked(sim: Simulator, args: Dict[str, Any],
                                                               fragment: str) -> None:
    result = info(sim, **args)
    assert result["failed"] and fragment in result["msg"] and "Traceback" not in result["msg"]
    assert sim.engine.vms[VM].enabled_at is None, "IMDS was not asked"


def test_imds_that_does_not_answer_is_one_sentence(tmp_path: Path) -> None:
    result = run(scheduled_events_info, {"imds_url": "http://127.0.0.1:9", "retries": 0, "timeout": 1})
    assert result["failed"] and "Traceback" not in result["msg"] and result["msg"].endswith(".")


serving = contextmanager(serve)


# ------------------------------------------------------------------ every scenario's event, as served

SCENARIO_EXPECTATIONS = {
    # scenario: (event type, source, status when first seen, time scale). Each scale keeps the first event as first
    # seen (until its NotBefore, its cancellation or the end of its Started window) for about 300 s of wall time.
    "platform-maintenance": ("Reboot", "Platform", "Scheduled", 3.0),    # 900 s notice
    "live-migration": ("Freeze", "Platform", "Scheduled", 3.0),          # 900 s notice
    "user-reboot": ("Reboot", "User", "Scheduled", 3.0),                 # 900 s notice
    "user-redeploy": ("Redeploy", "User", "Scheduled", 2.0),             # 600 s notice
    "spot-eviction": ("Preempt", "Platform", "Scheduled", 0.125),        # 30 s notice
    "scale-in": ("Terminate", "User", "Scheduled", 2.0),                 # 600 s notice
    "hardware-failure": ("Reboot", "Platform", "Started", 1.5),          # Started for 480 s at least
    "cancelled-maintenance": ("Reboot", "Platform", "Scheduled", 0.8),   # cancelled 240 s in at the earliest
    "degraded-hardware": ("Redeploy", "Platform", "Scheduled", 10.0),    # a week's notice
    "live-migration-replay": ("Freeze", "Platform", "Scheduled", 3.0),   # 900 s notice
}


def due_at_once(name: str) -> sc.Scenario:
    """A bundled scenario with its one event due at once, not 5 s in (40 s of wall time at the spot eviction's
    scale, which its 30 s notice needs to last 240 s)."""
    scenario = sc.load(name)
    return replace(scenario, specs=[replace(spec, at_s=(0.0, 0.0)) for spec in scenario.specs])


def first_event(sim: Simulator) -> Dict[str, Any]:
    with sim.lock:
        sim.engine.advance_to(sim.clock.now())
        return sim.engine.event_summaries()[0]


def read_vms(vms: List[str], listed: List[str]) -> List[str]:
    """A VM the event lists and one it does not (where the fleet has one): what tells the two apart is the same on
    every other VM."""
    return [next(vm for vm in vms if vm in listed)] + [vm for vm in vms if vm not in listed][:1]


def test_every_scenarios_event_is_read_as_served_and_named_by_the_compute_metadata() -> None:
    with ExitStack() as stack:
        sims = {scenario: stack.enter_context(serving(due_at_once(scenario), simulate_impact=False,
                                                      fleet=own_fleet(sc.load(scenario)), time_scale=expected[3]))
                for scenario, expected in SCENARIO_EXPECTATIONS.items()}
        truths = {scenario: first_event(sim) for scenario, sim in sims.items()}
        read = {scenario: read_vms([v.name for v in sim.engine.fleet.vms], truths[scenario]["resources"])
                for scenario, sim in sims.items()}
        results = {(scenario, vm): info(sims[scenario], vm=vm) for scenario, vms in read.items() for vm in vms}
    assert sum(len(vms) == 2 for vms in read.values()) >= 8, "most scenarios leave a VM out of their event"
    for (scenario, vm), result in results.items():
        event_type, source, status = SCENARIO_EXPECTATIONS[scenario][:3]
        truth = truths[scenario]
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


def test_scale_set_instance_names_match_exactly() -> None:
    with serving(QUIET, fleet=FleetSpec(kind="scale_set", name="vmss", vms=12, fault_domains=5)) as vmss:
        event_id = inject(vmss, {"type": "Reboot", "source": "User", "notice_s": 900,
                                 "resources": {"names": ["vmss_1"]}})
        listed = {vm: info(vmss, vm=vm)["events_for_this_vm"] for vm in ("vmss_1", "vmss_10", "vmss_11")}
    assert [e["event_id"] for e in listed["vmss_1"]] == [event_id]
    assert listed["vmss_10"] == [] and listed["vmss_11"] == []


def test_resource_name_overrides_the_compute_name(sim: Simulator) -> None:
    event_id = inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    as_listed = info(sim, vm="avset-web-vm1", include_instance=False, resource_name=VM.upper())
    assert [e["event_id"] for e in as_listed["events_for_this_vm"]] == [event_id]
    assert as_listed["this_vm"] == {"name": VM.upper()}
    anonymous = info(sim, vm="avset-web-vm1", include_instance=False)
    assert anonymous["events"][0]["affects_this_vm"] is None and anonymous["events_for_this_vm"] == []
    assert any("name is unknown" in w for w in anonymous["warnings"])


def test_unknown_event_type_is_kept_and_warned_about(sim: Simulator) -> None:
    body = {"DocumentIncarnation": 7, "Events": [{
        "EventId": "11111111-2222-3333-4444-555555555555", "EventStatus": "Scheduled", "EventType": "Hibernate",
        "ResourceType": "VirtualMachine", "Resources": [VM], "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT"}]}
    fault(sim, VM, {"kind": "body", "status": 200, "body": json.dumps(body)})
    result = info(sim)
    (event,) = result["events"]
    assert (event["event_type"], event["known_type"], event["affects_this_vm"]) == ("Hibernate", False, True)
    assert any("unknown EventType 'Hibernate'" in w for w in result["warnings"])


# ------------------------------------------------------------------ faults: retried, or one sentence

RETRYABLE = {
    "gone twice": [{"kind": "status", "status": 410, "count": 2}],
    "throttled": [{"kind": "status", "status": 429}],
    "server errors": [{"kind": "status", "status": 500}, {"kind": "status", "status": 503}],
    "dropped and reset": [{"kind": "drop"}, {"kind": "reset_mid_body"}],
    # longer than the timeout, within the first call's budget (each endpoint's first call is the one delayed)
    "slow first calls": [{"kind": "delay", "delay_s": 4.5, "path": "any"}, {"kind": "delay", "delay_s": 4.5}],
    "compute metadata 503": [{"kind": "status", "status": 503, "count": 1, "path": "compute"}],
}


@pytest.mark.parametrize("faults", RETRYABLE.values(), ids=list(RETRYABLE))
def test_every_retryable_fault_is_retried_then_succeeds(sim: Simulator, faults: List[Dict[str, Any]]) -> None:
    event_id = inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    fault(sim, VM, *faults)
    # The timeout is long enough for a plain answer on a loaded machine (a retry's answer must come within it).
    result = info(sim, retries=2, timeout=3, first_call_timeout=15)
    assert result["failed"] is False and [e["event_id"] for e in result["events"]] == [event_id], result
    assert sim.faults.pending() == {}, "every fault was met"


UNUSABLE = {
    "503 for good": ({"kind": "status", "status": 503, "count": -1},
                     "HTTP 503: Injected fault: HTTP 503 (gave up after 2 attempts)."),
    "malformed JSON": ({"kind": "malformed_json"}, "IMDS answered with malformed JSON"),
    "wrong shape": ({"kind": "wrong_shape"}, "is not a Scheduled Events document"),
    "not UTF-8": ({"kind": "non_utf8"}, "IMDS answered with bytes that are not UTF-8 text."),
    "redirect": ({"kind": "redirect"}, "IMDS clients never follow redirects."),
    "404": ({"kind": "body", "status": 404, "body": json.dumps({"error": "Not found"})}, "with HTTP 404: Not found."),
}


@pytest.mark.parametrize("unusable, message", UNUSABLE.values(), ids=list(UNUSABLE))
def test_an_unusable_answer_fails_in_one_sentence(sim: Simulator, unusable: Dict[str, Any], message: str) -> None:
    fault(sim, VM, unusable)
    result = info(sim, retries=1)
    assert result["failed"] is True and message in result["msg"], result["msg"]
    assert "Traceback" not in json.dumps(result) and "\n" not in result["msg"]
    assert sim.redirects_followed == []


def test_first_call_delay_is_survived_with_the_first_call_budget() -> None:
    with serving(QUIET, first_call_delay_s=1.5) as slow:
        result = info(slow, timeout=0.5, first_call_timeout=10)
    assert result["failed"] is False


def test_proxy_variables_pointing_nowhere_change_nothing(sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = "http://127.0.0.1:9"
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy)
    monkeypatch.setenv("no_proxy", "")
    assert info(sim)["failed"] is False
    assert sim.violations == []


# ------------------------------------------------------------------ waiting for the document to change

def test_wait_for_change_returns_when_the_incarnation_moves_and_unchanged_is_no_error(sim: Simulator) -> None:
    read = info(sim)
    # The change comes after the read, at a wall time far inside the wait's timeout: no race with a clock.
    later = threading.Timer(0.3, inject, (sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}}))
    later.start()
    try:
        waited = info(sim, previous=read, wait_for_change=True, wait_timeout=60, poll_interval=0.1)
    finally:
        later.join()
    assert waited["waited"]["changed"] is True and waited["diff"]["changed"] is True
    assert waited["document_incarnation"] > read["document_incarnation"]
    quiet = info(sim, wait_for_change=True, since_incarnation=waited["document_incarnation"], wait_timeout=0.5,
                 poll_interval=0.2)
    # How many polls fit in 0.5 s depends on the machine's load; the polling loop itself is a virtual-clock test.
    assert quiet["failed"] is False and quiet["waited"]["changed"] is False and quiet["waited"]["polls"] >= 1
