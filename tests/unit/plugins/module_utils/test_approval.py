"""Approval planning: what may be sent, and refusing everything on any doubt."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.approval import (
    ApprovalRequestError,
    plan_approval,
    requested_ids,
)

A, B, C = ("AAAAAAAA-0000-0000-0000-00000000000%d" % i for i in (1, 2, 3))


def event(event_id: str, status: str = "Scheduled", resources: tuple = ("vm1", "vm2")) -> dict:
    return {"event_id": event_id, "event_status": status, "resources": list(resources)}


def doc(*events: dict, incarnation: int = 5) -> dict:
    return {"document_incarnation": incarnation, "events": list(events)}


def test_ids_come_from_event_ids_or_events_upper_cased_once() -> None:
    assert requested_ids([A.lower(), A, " %s " % B]) == [A, B]
    assert requested_ids(events=[{"event_id": A}, {"EventId": B.lower()}]) == [A, B]


@pytest.mark.parametrize("ids, events, message", [
    ([], None, "no event ids to approve were given."),
    ([""], None, "event id '' is empty or not text."),
    (None, [{"id": A}], "events[0] has no event_id (or EventId)."),
    (None, ["text"], "events[0] has no event_id (or EventId)."),
])
def test_bad_id_input_is_one_sentence(ids: object, events: object, message: str) -> None:
    with pytest.raises(ApprovalRequestError) as info:
        requested_ids(ids, events)
    assert str(info.value) == message


def test_scheduled_events_listing_this_vm_are_approved_started_ones_reported() -> None:
    plan = plan_approval(doc(event(A), event(B, "Started")), [A, B], "VM2")
    assert (plan.approve, plan.already_started, plan.error) == ([A], [B], None)
    assert plan.diff()["after"] == "%s: Started (approved)\n%s: Started\n" % (A, B)


def test_an_event_not_listing_this_vm_refuses_everything_unless_forced() -> None:
    parsed = doc(event(A), event(B, resources=("vm10",)))
    plan = plan_approval(parsed, [A, B], "vm1")
    assert plan.approve == [] and plan.refused == [B]
    assert plan.error.startswith("event %s does not list this VM (vm1) in Resources" % B)
    assert plan_approval(parsed, [A, B], "vm1", force=True).approve == [A, B]


def test_missing_ids_fail_unless_ignored() -> None:
    plan = plan_approval(doc(event(A)), [A, C], "vm1")
    assert plan.approve == [] and plan.missing == [C] and "not in the current document" in plan.error
    ignored = plan_approval(doc(event(A)), [A, C], "vm1", missing="ignore")
    assert (ignored.approve, ignored.error) == ([A], None)


def test_a_moved_document_refuses_everything() -> None:
    plan = plan_approval(doc(event(A), incarnation=6), [A], "vm1", expected_incarnation=5)
    assert plan.approve == [] and "moved on (DocumentIncarnation 6, expected 5)" in plan.error
    assert plan_approval(doc(event(A), incarnation=5), [A], "vm1", expected_incarnation=5).approve == [A]


def test_unknown_status_is_never_approved() -> None:
    plan = plan_approval(doc(event(A, "Paused")), [A], "vm1")
    assert plan.approve == [] and plan.error == "event %s has an unknown EventStatus, so nothing was approved." % A
