"""The state file's content (module_utils/cycle/state.py) on its own: what loads, from which version, and what the
write-ahead puts on record. What a host saves at each step of a cycle, through the plan, is in test_plan.py."""
from __future__ import annotations

import json

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    empty_state,
    event_record,
    load_state,
    state_text,
    with_approved,
)

E1 = "00000001-0000-4000-8000-000000000001"
E2 = "00000002-0000-4000-8000-000000000002"
REBOOT = {"event_id": E1, "event_type": "Reboot", "event_status": "Scheduled", "resources": ["vm0"],
          "not_before": "2026-11-22T03:00:00Z", "event_source": "Platform", "duration_in_seconds": -1,
          "description": "Host maintenance.", "known_type": True, "known_status": True}


def test_a_version_1_state_keeps_what_was_prepared() -> None:
    reboot = event_record(REBOOT)
    reboot.pop("prepare")
    v1 = {"version": 1, "document_incarnation": 2, "events": [reboot], "prepared": [E1.upper()], "approved": []}
    state, status, _message = load_state(json.dumps(v1))
    assert status == "loaded" and state["events"][0]["prepare"] == "done"


def test_a_missing_state_is_no_news() -> None:
    assert load_state(None) == (None, "missing", "")


def test_a_state_that_is_not_json_is_corrupt_in_one_sentence() -> None:
    state, status, message = load_state("{")
    assert (state, status) == (None, "corrupt") and message.startswith("the state file is not JSON (")


def test_the_approved_ids_are_on_record_once_each_and_read_back_as_written() -> None:
    state = with_approved(with_approved(empty_state(), [E2, E1]), [E1.upper()])
    assert state["approved"] == [E1, E2], "an id already on record, whatever its case, is not added again"
    text = state_text(dict(state, events=[event_record(REBOOT, "done")]))
    assert text == state_text(json.loads(text)), "deterministic: an unchanged state is an unchanged file"
    assert load_state(text) == (json.loads(text), "loaded", "")
