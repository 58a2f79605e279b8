"""What a task result records (module_utils/observation/history_records.py: record_of_result), the one rule the
live callback and the AWX / ansible-runner loaders share; their end-to-end tests are tests/history and
tests/analysis."""
from __future__ import annotations

from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_records import (
    record_of_result,
)

READ = {"observed_at": "2026-11-26T10:00:00.000Z", "document_available": True, "document_incarnation": 2,
        "raw": {"DocumentIncarnation": 2, "Events": []}, "this_vm": {"name": "vm-a", "fault_domain": 1}}
APPROVED = {"changed": True, "approved": ["E1"], "sent": {"StartRequests": [{"EventId": "E1"}]}}


def test_a_completed_read_is_an_observation_and_teaches_the_host_its_vm() -> None:
    vms: Dict[str, Any] = {}
    record = record_of_result("scheduled_events_claim", "host-a", dict(READ), vms)
    assert record["host"] == "host-a" and record["document_incarnation"] == 2 and record["vm"]["name"] == "vm-a"
    assert vms["host-a"]["fault_domain"] == 1


@pytest.mark.parametrize("module, data, check_mode", [
    ("scheduled_events_info", dict(READ, skipped=True), False),
    ("scheduled_events_info", {"failed": True, "msg": "IMDS did not answer"}, False),
    ("scheduled_events_approve", dict(APPROVED), True),
    ("debug", dict(READ), False),
    ("include_tasks", {"include": "drain.yml"}, False),
])
def test_what_records_nothing(module: str, data: Dict[str, Any], check_mode: bool) -> None:
    vms: Dict[str, Any] = {}
    assert record_of_result(module, "host-a", data, vms, check_mode=check_mode) is None
    assert vms == {}


def test_a_control_plane_read_records_its_source_and_how_events_ended() -> None:
    ended = {"EventId": "E9", "EventStatus": "Canceled", "EventType": "Reboot", "Resources": ["vm-a"], "NotBefore": ""}
    record = record_of_result("scheduled_events_claim", "host-a",
                              dict(READ, transport="control_plane", control_plane_ended=[ended]), {})
    assert record["source"] == "control_plane" and record["events"] == [ended]
    assert "source" not in record_of_result("scheduled_events_claim", "host-a", dict(READ, transport="module"), {})
    approval = record_of_result("scheduled_events_approve", "host-a", dict(APPROVED, transport="control_plane"), {})
    assert approval["source"] == "control_plane"
