"""The relay's fast path (module_utils/relay/fast_path.py): which events run the VM's local command, once each."""
from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.fast_path import (
    DEFAULT_TYPES,
    KEPT_IDS,
    command_environment,
    events_to_act_on,
    remembered,
)


def raw(event_id: str, event_type: str, resources: List[str], status: str = "Scheduled") -> Dict[str, Any]:
    return {"EventId": event_id, "EventType": event_type, "EventStatus": status, "Resources": resources,
            "NotBefore": "Mon, 05 Jan 2026 00:00:40 GMT" if status == "Scheduled" else ""}


def test_a_preempt_or_terminate_that_lists_this_vm_is_acted_on_whatever_its_status() -> None:
    document = {"DocumentIncarnation": 3, "Events": [
        raw("a", "Preempt", ["VM0"]), raw("b", "Terminate", ["vm0"], "Started"), raw("c", "Reboot", ["vm0"]),
        raw("d", "Preempt", ["vm1"]), raw("e", "Preempt", ["vm00"])]}
    assert [e["EventId"] for e in events_to_act_on(document, "vm0", DEFAULT_TYPES, [])] == ["a", "b"]


def test_an_event_already_acted_on_is_not_again_whatever_the_case_of_its_id() -> None:
    document = {"Events": [raw("abc", "Preempt", ["vm0"]), raw("DEF", "Preempt", ["vm0"])]}
    assert [e["EventId"] for e in events_to_act_on(document, "vm0", DEFAULT_TYPES, ["ABC"])] == ["DEF"]


def test_nothing_is_acted_on_without_a_document_or_with_damaged_events() -> None:
    assert events_to_act_on(None, "vm0", DEFAULT_TYPES, []) == []
    assert events_to_act_on({"Events": "nope"}, "vm0", DEFAULT_TYPES, []) == []
    assert events_to_act_on({"Events": [{"EventType": "Preempt"}, 7]}, "vm0", DEFAULT_TYPES, []) == []


def test_the_command_learns_the_event_as_served() -> None:
    env = command_environment(raw("a-B", "Preempt", ["vm0"]), "vm0")
    assert env == {"SCHEDULED_EVENT_ID": "a-B", "SCHEDULED_EVENT_TYPE": "Preempt", "SCHEDULED_EVENT_STATUS": "Scheduled",
                   "SCHEDULED_EVENT_NOT_BEFORE": "Mon, 05 Jan 2026 00:00:40 GMT", "SCHEDULED_EVENT_VM": "vm0"}


def test_the_ids_kept_are_bounded_newest_last() -> None:
    kept = remembered([str(i) for i in range(KEPT_IDS)], ["x", "5"])
    assert len(kept) == KEPT_IDS and kept[-2:] == ["X", "5"] and kept.count("5") == 1 and "0" not in kept
