"""scheduled_events_info's behaviour (module_utils/tasks/info.py) with IMDS answered in-process: quiet, state, failures."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import parse_document
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsClient, ImdsError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LinuxVm
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import (
    argument_spec,
    run_info,
    wait_for_document,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import TaskFailed

COMPUTE = {"name": "vm0", "platformFaultDomain": "1", "platformUpdateDomain": "0", "resourceId": "/rg/vm0",
           "vmScaleSetName": "", "zone": "", "location": "westeurope", "osType": "Linux"}
REBOOT = {"EventId": "602d9444-d2cd-49c7-8624-8643e7171297", "EventType": "Reboot", "EventStatus": "Scheduled",
          "ResourceType": "VirtualMachine", "Resources": ["vm0"], "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT",
          "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}


def params(**given: Any) -> Dict[str, Any]:
    values = {name: spec.get("default") for name, spec in argument_spec().items()}
    values.update(retries=0, state_path="/vm/state.json", **given)
    return values


def vm(send: Callable[[str, str, Optional[str], float], bytes], state: Optional[str],
       warnings: List[str]) -> LinuxVm:
    """A Linux VM whose IMDS answers with `send` and whose state file holds `state` (None: missing)."""
    host = LinuxVm(ImdsClient(send=send, retries=0), warnings.append)
    host.read_state = lambda path: state  # type: ignore[method-assign]
    return host


def edges(document: Optional[Dict[str, Any]], state: Optional[str], warnings: List[str]) -> LinuxVm:
    """IMDS that serves `document` (None: the GET fails) and a state file holding `state` (None: missing)."""
    def send(method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        if "/instance/compute" in url:
            return json.dumps(COMPUTE).encode()
        if document is None:
            raise ImdsError("IMDS answered GET with HTTP 500.")
        return json.dumps(document).encode()
    return vm(send, state, warnings)


def test_a_vm_without_events_or_state_file_is_quiet_and_says_nothing() -> None:
    warnings: List[str] = []
    result = run_info(params(), edges({"DocumentIncarnation": 1, "Events": []}, None, warnings))
    assert result["quiet"] is True and result["state_status"] == "missing" and warnings == []


def test_an_event_that_lists_other_vms_only_leaves_this_one_quiet() -> None:
    others = dict(REBOOT, Resources=["vm1", "vm10"])  # vm0 is not vm10: exact names
    result = run_info(params(), edges({"DocumentIncarnation": 2, "Events": [others]}, None, []))
    assert result["quiet"] is True and result["events"] and result["events_for_this_vm"] == []
    listed = run_info(params(), edges({"DocumentIncarnation": 2, "Events": [dict(others, Resources=["VM0"])]}, None, []))
    assert listed["quiet"] is False, "an event that lists this VM (any case) is work"


def test_a_vm_that_cannot_name_itself_is_never_quiet() -> None:
    result = run_info(params(include_instance=False), edges({"DocumentIncarnation": 2, "Events": [
        dict(REBOOT, Resources=["vm1"])]}, None, []))
    assert result["this_vm"].get("name") is None and result["quiet"] is False, "nothing can be matched to it"


def test_a_corrupt_state_is_never_quiet_and_warns() -> None:
    warnings: List[str] = []
    result = run_info(params(), edges({"DocumentIncarnation": 1, "Events": []}, "{not json", warnings))
    assert result["quiet"] is False and result["state_status"] == "corrupt"
    assert len(warnings) == 1 and "not JSON" in warnings[0]


def test_regression_a_state_of_a_newer_version_is_untrusted_not_taken_for_a_first_cycle() -> None:
    """Issue 25 (low): a state file this code cannot trust (damaged, or written by a newer collection) was saved
    over as a first cycle, losing the recovers it owed. It is corrupt now: never quiet, kept, the host busy."""
    warnings: List[str] = []
    newer = json.dumps({"version": 99, "document_incarnation": 3, "events": [], "approved": [], "more": {}})
    result = run_info(params(), edges({"DocumentIncarnation": 4, "Events": []}, newer, warnings))
    assert result["quiet"] is False and result["state_status"] == "corrupt" and result["state"] is None
    assert len(warnings) == 1 and "has version 99" in warnings[0]


def test_a_vm_whose_state_still_owes_a_recover_is_not_quiet() -> None:
    record = {"event_id": REBOOT["EventId"], "event_type": "Reboot", "event_status": "Started", "resources": ["vm0"],
              "not_before": None, "event_source": "Platform", "duration_in_seconds": -1, "description": "",
              "prepare": "done"}
    state = json.dumps({"version": 2, "document_incarnation": 3, "events": [record], "approved": []})
    result = run_info(params(), edges({"DocumentIncarnation": 4, "Events": []}, state, []))
    assert result["quiet"] is False and result["diff"]["removed"][0]["event_id"] == REBOOT["EventId"]


def test_no_document_is_never_quiet() -> None:
    empty_200 = vm(lambda m, u, b, t: json.dumps(COMPUTE).encode() if "compute" in u else b"", None, [])
    result = run_info(params(), empty_200)
    assert result["document_available"] is False and result["quiet"] is False


def test_a_failed_read_still_names_its_vm() -> None:
    with pytest.raises(TaskFailed) as failure:
        run_info(params(), edges(None, None, []))
    assert failure.value.result["this_vm"]["name"] == "vm0" and failure.value.result["this_vm"]["fault_domain"] == 1


class DocumentsInTurn:
    """IMDS answering each GET with the next incarnation of `incarnations` (the last one repeats)."""

    def __init__(self, incarnations: List[int]) -> None:
        self.incarnations, self.gets = incarnations, 0

    def document(self) -> Optional[Dict[str, Any]]:
        incarnation = self.incarnations[min(self.gets, len(self.incarnations) - 1)]
        self.gets += 1
        return parse_document({"DocumentIncarnation": incarnation, "Events": []})


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_wait_polls_until_the_incarnation_moves() -> None:
    clock = VirtualClock()
    imds = DocumentsInTurn([3, 3, 3, 4])
    parsed, waited = wait_for_document(imds, 3, 60, 1.0, clock=lambda: clock.now, sleep=clock.sleep)
    assert parsed["document_incarnation"] == 4 and waited == {"changed": True, "polls": 4, "seconds": 3.0}


def test_an_unchanged_document_returns_at_the_timeout_without_oversleeping_it() -> None:
    clock = VirtualClock()
    parsed, waited = wait_for_document(DocumentsInTurn([3]), 3, 2.5, 1.0, clock=lambda: clock.now, sleep=clock.sleep)
    assert parsed["document_incarnation"] == 3 and waited == {"changed": False, "polls": 3, "seconds": 2.0}


def no_compute(document: Dict[str, Any], warnings: List[str]) -> LinuxVm:
    """IMDS without compute metadata, as Microsoft's mock server (404 for /metadata/instance/compute)."""
    def send(method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        if "/instance/compute" in url:
            raise ImdsError("IMDS answered GET %s with HTTP 404: Not Found." % url, 404)
        return json.dumps(document).encode()
    return vm(send, None, warnings)


def test_without_compute_metadata_a_named_vm_is_read_and_its_fault_domain_is_unknown() -> None:
    """Issue 27: against Microsoft's mock server every read failed on the compute endpoint's 404."""
    warnings: List[str] = []
    document = {"DocumentIncarnation": 2, "Events": [dict(REBOOT, Resources=["vm0"])]}
    result = run_info(params(resource_name="vm0"), no_compute(document, warnings))
    assert result["this_vm"] == {"name": "vm0"} and [e["affects_this_vm"] for e in result["events"]] == [True]
    assert len(warnings) == 1 and "no compute metadata" in warnings[0] and "fault domain is unknown" in warnings[0]


def test_without_compute_metadata_or_resource_name_the_read_fails_in_one_sentence() -> None:
    with pytest.raises(TaskFailed, match=r"HTTP 404: Not Found\.$"):
        run_info(params(), no_compute({"DocumentIncarnation": 1, "Events": []}, []))
