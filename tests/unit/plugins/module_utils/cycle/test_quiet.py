"""The one quiet rule (module_utils/cycle/quiet.py), and its two readers agreeing on it: the info module's `quiet`
(a parsed read) and the event relay's (a raw document). A relay that calls a VM quiet which a cycle would not
takes it out of the event-driven runs."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import is_quiet, owes_work
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import is_quiet as relay_quiet
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import _quiet as info_quiet

SAVED = {"version": 2, "document_incarnation": 1, "approved": [], "events": [{"event_id": "E1"}]}


@pytest.mark.parametrize("state, status, owed", [
    (None, "missing", False),
    ({"events": []}, "loaded", False),
    (SAVED, "loaded", True),
    (None, "corrupt", True),
])
def test_a_state_owes_work_when_it_keeps_events_or_cannot_be_trusted(state: Any, status: str, owed: bool) -> None:
    assert owes_work(state, status) is owed


def test_quiet_needs_a_document_a_name_no_event_listing_the_vm_and_nothing_owed() -> None:
    assert is_quiet(True, "vm0", False, False)
    assert not is_quiet(False, "vm0", False, False), "no document: cannot tell"
    assert not is_quiet(True, "", False, False), "no name: cannot tell which events list it"
    assert not is_quiet(True, "vm0", True, False)
    assert not is_quiet(True, "vm0", False, True)


def reboot(resources: List[str]) -> Dict[str, Any]:
    return {"EventId": "E1", "EventType": "Reboot", "EventStatus": "Scheduled", "Resources": resources,
            "NotBefore": "Mon, 05 Jan 2026 00:15:12 GMT", "EventSource": "Platform"}


@pytest.mark.parametrize("events, state, status", [
    ([], None, "missing"),
    ([reboot(["vm1"])], None, "missing"),   # another VM's event: nothing to do here
    ([reboot(["vm0"])], None, "missing"),
    ([], SAVED, "loaded"),
    ([], None, "corrupt"),
    (None, None, "missing"),                 # no document
])
def test_the_info_module_and_the_relay_agree(events: Optional[List[Dict[str, Any]]], state: Any, status: str) -> None:
    document = None if events is None else {"DocumentIncarnation": 1, "Events": events}
    read = {"document_available": events is not None, "this_vm": {"name": "vm0"},
            "events_for_this_vm": [e for e in events or [] if "vm0" in e["Resources"]]}
    assert info_quiet(read, state, status) == relay_quiet(document, owes_work(state, status), "vm0")
