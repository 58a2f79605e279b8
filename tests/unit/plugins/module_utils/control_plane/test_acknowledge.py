"""The acknowledge request for one scope, and what each answer means for each event sent."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.acknowledge import (
    AcknowledgeError,
    acknowledge_outcome,
    acknowledge_request,
)

SCOPE = {"subscription": "s1", "resource_group": "rg", "scope_type": "availabilitySets", "scope_name": "web"}
A, B, C = ("1A7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21", "2B7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21",
           "3C7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21")
BASE = "/subscriptions/s1/resourcegroups/rg/providers/Microsoft.Compute/availabilitySets/web/providers/" \
       "Microsoft.Maintenance/scheduledevents"


def test_one_event_is_acknowledged_on_its_own_path_without_a_body() -> None:
    assert acknowledge_request(SCOPE, [A], "2023-10-01-preview") == {
        "method": "POST", "path": f"{BASE}/{A}/acknowledge?api-version=2023-10-01-preview", "body": None}


def test_several_go_in_one_list_acknowledge() -> None:
    expected = {"method": "POST", "path": f"{BASE}?api-version=2025-11-01", "body": {"value": [A, B]}}
    assert acknowledge_request(SCOPE, [A, B]) == expected


@pytest.mark.parametrize("scope, ids, version, sentence", [
    (SCOPE, [A, B], "2023-10-01-preview", "acknowledges one event at a time; 2 were given"),
    (SCOPE, [A], "2022-07-01-preview", "has no acknowledge"),
    (SCOPE, ["../../x"], "2025-11-01", "is not an EventId"),
    (dict(SCOPE, scope_type="disks"), [A], "2025-11-01", "is not a scope Microsoft.Maintenance acknowledges in"),
    (SCOPE, [], "2025-11-01", "No event to acknowledge"),
])
def test_what_cannot_be_sent_is_refused_before_sending(scope: dict, ids: list, version: str, sentence: str) -> None:
    with pytest.raises(AcknowledgeError, match=sentence):
        acknowledge_request(scope, ids, version)


def test_200_approves_every_event_sent() -> None:
    outcome = acknowledge_outcome(200, {"value": "Successfully Approved"}, [A, B])
    assert outcome["approved"] == [A, B] and outcome["error"] is None


def test_207_is_read_per_event_by_id_in_any_order_and_an_unmentioned_one_is_not_approved() -> None:
    body = {"Error": {"Code": "MultiStatusResponse", "Message": "Events returned different statuses.",
                      "Details": [{"Target": B.lower(), "Code": "Conflict", "Message": "cannot be acknowledged"},
                                  {"Target": A, "Code": "NotFound", "Message": "Scheduled event not found"}]}}
    outcome = acknowledge_outcome(207, body, [A, B, C])
    assert (outcome["approved"], outcome["gone"], outcome["refused"], outcome["unknown"]) == ([], [A], {B: "Conflict"}, [C])
    assert outcome["error"] == (f"Azure's 207 answer does not say whether it acknowledged {C} (not named): counted as "
                                "not approved until a read shows it Started, and never sent again.")


def test_regression_a_207_code_outside_the_known_ones_is_unknown_not_refused() -> None:
    """The 207's per-event codes are not in the spec: a code the collection did not list (say Accepted) was read as a
    refusal, and an approval Azure may have taken failed the task as refused. It is unknown now, named with its code."""
    body = {"error": {"code": "MultiStatusResponse", "details": [
        {"target": A, "code": "Accepted", "message": "Acknowledged"}, {"target": B, "code": "Succeeded"}]}}
    outcome = acknowledge_outcome(207, body, [A, B])
    assert (outcome["approved"], outcome["refused"], outcome["unknown"]) == ([B], {}, [A])
    assert f"does not say whether it acknowledged {A} (Accepted)" in outcome["error"]


def test_an_unknown_single_event_is_gone_not_failed() -> None:
    body = {"error": {"code": "InvalidScheduledEventId", "message": "Scheduled event not found"}}
    assert acknowledge_outcome(404, body, [A])["gone"] == [A]


@pytest.mark.parametrize("status, sentence", [
    (401, "Azure refused the credentials (401: "),
    (403, "needs the Scheduled Events Contributor role"),
    (404, "Azure knows no such VM, scale set or availability set"),
    (405, "not offered in this region"),
    (429, "Azure throttled the request"),
    (500, "Azure answered 500 (boom); nothing was approved."),
])
def test_every_other_answer_approves_nothing_and_says_why_in_one_sentence(status: int, sentence: str) -> None:
    outcome = acknowledge_outcome(status, {"error": {"code": "X", "message": "boom"}}, [A, B])
    assert outcome["approved"] == [] and outcome["unknown"] == [A, B] and sentence in outcome["error"]
