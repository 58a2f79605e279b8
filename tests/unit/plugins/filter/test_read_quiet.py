"""The done report's hosts (plugins/filter/read_quiet.py): those a cycle's own read found quiet, or that its own
read and its last save left quiet; never on anything but the cycle's own read."""
from __future__ import annotations

from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.filter.read_quiet import read_quiet

VM0 = {"name": "vm0", "fault_domain": 0}
REBOOT = {"event_id": "E1", "event_type": "Reboot", "event_status": "Scheduled", "resources": ["vm0"]}
OWED = {"quiet": False, "document_available": True, "this_vm": VM0, "events_for_this_vm": [], "lock": {"taken": True}}


def verdict(query: Dict[str, Any], saved: Any = None, **host_vars: Any) -> bool:
    found = dict(host_vars, maintenance_cycle_query=query)
    if saved is not None:
        found["maintenance_cycle_saved"] = saved
    return read_quiet(["vm0"], {"vm0": found}) == ["vm0"]


def test_a_read_that_said_quiet_counts() -> None:
    assert verdict(dict(OWED, quiet=True))


def test_a_recover_whose_save_left_a_state_that_owes_nothing_leaves_the_host_quiet() -> None:
    # Regression (issue 44): such a host stayed in the runs until a further cycle read it quiet, one cycle more
    # per event, rerun_seconds after the recover.
    assert verdict(OWED, {"changed": True, "owes_work": False})


@pytest.mark.parametrize("query, saved, why", [
    (OWED, {"changed": True, "owes_work": True}, "its state still owes something"),
    (OWED, {"skipped": True, "changed": False}, "no save this cycle"),
    (OWED, {"failed": True, "msg": "the lock was taken over", "owes_work": False}, "the save failed"),
    (OWED, {"changed": False}, "a save in check mode says nothing"),
    (OWED, None, "no save at all (its recover failed)"),
    (dict(OWED, events_for_this_vm=[REBOOT]), {"owes_work": False}, "an event lists it"),
    (dict(OWED, document_available=False), {"owes_work": False}, "no document was read"),
    (dict(OWED, this_vm={}), {"owes_work": False}, "it does not know its name"),
    (dict(OWED, failed=True), {"owes_work": False}, "its read failed"),
    (dict(OWED, lock={"held_by": "run-2"}), {"owes_work": False}, "another run holds it"),
    ({key: value for key, value in OWED.items() if key != "events_for_this_vm"}, {"owes_work": False},
     "a read that does not say which events list it"),
])
def test_anything_short_of_that_keeps_the_host_in_the_runs(query: Dict[str, Any], saved: Any, why: str) -> None:
    assert not verdict(query, saved), why


def test_a_host_left_alone_or_not_in_the_play_is_not_reported() -> None:
    assert not verdict(dict(OWED, quiet=True), maintenance_cycle_left_alone=True)
    assert read_quiet(["vm9"], {}) == []
