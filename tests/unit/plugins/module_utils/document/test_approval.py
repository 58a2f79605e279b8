"""Approval planning: what may be sent, and refusing everything on any doubt."""
from __future__ import annotations

import json
from typing import List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import (
    ApprovalRequestError,
    manual_approval_plan,
    plan_approval,
    planned_events,
    requested_ids,
    stale_events,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.approve import (
    argument_spec,
    run_approve,
    wait_until_started,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsClient
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LinuxVm
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import TaskFailed

A, B, C = ("AAAAAAAA-0000-0000-0000-00000000000%d" % i for i in (1, 2, 3))


def event(event_id: str, status: str = "Scheduled", resources: tuple = ("vm1", "vm2"), kind: str = "Reboot") -> dict:
    return {"event_id": event_id, "event_status": status, "resources": list(resources), "event_type": kind}


def doc(*events: dict, incarnation: int = 5) -> dict:
    return {"document_incarnation": incarnation, "events": list(events)}


def test_ids_come_from_event_ids_or_events_once_and_keep_their_spelling() -> None:
    assert requested_ids([A.lower(), A, " %s " % B]) == [A.lower(), B]
    assert requested_ids(events=[{"event_id": A}, {"EventId": B.lower()}]) == [A, B.lower()]


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


# ------------------------------------------------ ids go back to IMDS exactly as served


def test_ids_are_matched_case_insensitively_and_reported_as_served() -> None:
    ghost = "AAAAAAAA-0000-0000-0000-00000000000F"
    parsed = doc(event(A.lower()), event(B.lower(), "Started"), event(C, resources=("vm10",)))
    plan = plan_approval(parsed, [A, B, ghost], "vm1", missing="ignore")
    assert (plan.approve, plan.already_started) == ([A.lower()], [B.lower()])
    assert plan.missing == [ghost]  # not served: the requested spelling
    assert plan.diff()["after"] == "%s: absent\n%s: Started (approved)\n%s: Started\n" % (ghost, A.lower(), B.lower())
    refused = plan_approval(parsed, [C.lower()], "vm1")
    assert refused.refused == [C] and refused.error.startswith("event %s does not list" % C)


def served(*events: dict, incarnation: int = 5) -> bytes:
    return json.dumps({"DocumentIncarnation": incarnation, "Events": [
        {"EventId": e["event_id"], "EventStatus": e["event_status"], "EventType": e["event_type"],
         "ResourceType": "VirtualMachine", "Resources": e["resources"], "NotBefore": ""} for e in events]}).encode()


class FakeImds:
    """Serves `documents` in turn (the last one for ever) and records every POST body."""

    def __init__(self, *documents: bytes) -> None:
        self.documents = list(documents)
        self.posts: List[dict] = []
        self.gets = 0

    def send(self, method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        self.gets += method == "GET"
        if method == "POST":
            self.posts.append(json.loads(body or "null"))
            return b""
        return self.documents.pop(0) if len(self.documents) > 1 else self.documents[0]


def approve_params(**overrides: object) -> dict:
    params = dict((name, spec.get("default")) for name, spec in argument_spec().items())
    params.update(resource_name="vm1", poll_interval=0.01, wait_timeout=1.0)
    params.update(overrides)
    return params


def test_the_post_carries_each_id_exactly_as_imds_served_it() -> None:
    imds = FakeImds(served(event(A.lower()), event(B)), served(event(A.lower(), "Started")))
    warnings: List[str] = []
    result = run_approve(approve_params(event_ids=[A, B.lower()], wait_for_start=True),
                         LinuxVm(ImdsClient(send=imds.send), warnings.append))
    assert imds.posts == [{"StartRequests": [{"EventId": A.lower()}, {"EventId": B}]}]
    assert result["approved"] == [A.lower(), B] and result["started"] == [A.lower(), B]
    assert result["stale"] == [] and warnings == []


def test_waiting_matches_ids_case_insensitively_and_keeps_their_spelling() -> None:
    client = LinuxVm(ImdsClient(send=FakeImds(served(event(A), event(B.lower(), "Started"))).send), print)
    ticks = iter(range(100))
    done = wait_until_started(client, [A.lower(), B], 3, 1, clock=lambda: next(ticks), sleep=lambda _s: None)
    assert done == [B]


# ------------------------------------------------ a plan that went stale is skipped, not failed


def planned(event_id: str, kind: str = "Reboot", resources: tuple = ("vm1", "vm2")) -> dict:
    return {"event_id": event_id, "event_type": kind, "resources": list(resources), "reason": "extra keys are ignored"}


@pytest.mark.parametrize("current, plan, warning", [
    (event(A, kind="Redeploy"), planned(A), "since it was planned, its EventType changed from Reboot to Redeploy"),
    (event(A, resources=("vm1", "vm2", "vm3")), planned(A), "since it was planned, its Resources changed (added vm3)"),
    (event(A, resources=("vm1",)), planned(A), "since it was planned, its Resources changed (removed vm2)"),
    (event(A, resources=("vm1", "vm9"), kind="Freeze"), planned(A), "since it was planned, its EventType changed "
     "from Reboot to Freeze and its Resources changed (added vm9; removed vm2)"),
    (event(A), planned(B), "it is not in the plan"),
])
def test_an_event_that_changed_since_the_plan_is_stale(current: dict, plan: dict, warning: str) -> None:
    stale = stale_events([current], [A.lower()], [plan])
    assert stale == {A: "event %s was not approved: %s; the next cycle decides anew." % (A, warning)}


def test_names_are_compared_as_resource_names_and_other_keys_ignored() -> None:
    current = event(A.lower(), resources=("VM1", "_vm2"))
    assert stale_events([current], [A], [dict(planned(A), resources=["vm2", "vm1"], not_before="x")]) == {}
    assert stale_events([current], [B], [planned(A)]) == {}  # not in the document: missing, not stale


def test_stale_events_are_skipped_with_a_warning_and_the_others_approved() -> None:
    parsed = doc(event(A, resources=("vm1", "vm2", "outsider")), event(B), event(C))
    plan = plan_approval(parsed, [A, B, C], "vm1", planned=[planned(A), planned(B)])
    assert (plan.approve, plan.stale, plan.refused, plan.error) == ([B], [A, C], [], None)
    assert plan.warnings == [
        "event %s was not approved: since it was planned, its Resources changed (added outsider); "
        "the next cycle decides anew." % A,
        "event %s was not approved: it is not in the plan; the next cycle decides anew." % C]
    # Without a plan nothing is stale.
    assert plan_approval(parsed, [A, B], "vm1").approve == [A, B]


def test_a_stale_event_that_no_longer_lists_this_vm_is_skipped_not_refused() -> None:
    plan = plan_approval(doc(event(A, resources=("vm7",)), event(B)), [A, B], "vm1", planned=[planned(A), planned(B)])
    assert (plan.approve, plan.stale, plan.refused, plan.error) == ([B], [A], [], None)


def test_only_scheduled_events_are_judged_against_the_plan() -> None:
    parsed = doc(event(A, "Started", kind="Redeploy"))
    plan = plan_approval(parsed, [A, B], "vm1", missing="ignore", planned=[])
    assert (plan.already_started, plan.missing, plan.stale) == ([A], [B], [])


@pytest.mark.parametrize("entries, message", [
    ([{"event_type": "Reboot", "resources": []}], "planned[0] has no event_id."),
    (["text"], "planned[0] has no event_id."),
    ([{"event_id": A, "resources": []}], "planned[0] (event %s) has no event_type." % A),
    ([{"event_id": A, "event_type": "Reboot", "resources": "vm1"}],
     "planned[0] (event %s) has no resources (a list of VM names)." % A),
    ([planned(A), planned(A.lower())], "planned lists event %s more than once." % A.lower()),
])
def test_a_malformed_plan_is_one_sentence(entries: list, message: str) -> None:
    with pytest.raises(ApprovalRequestError) as info:
        planned_events(entries)
    assert str(info.value) == message


def test_the_task_skips_stale_events_with_a_warning_and_does_not_fail() -> None:
    imds = FakeImds(served(event(A, kind="Redeploy"), event(B.lower())))
    warnings: List[str] = []
    result = run_approve(approve_params(event_ids=[A, B], planned=[planned(A), planned(B)]),
                         LinuxVm(ImdsClient(send=imds.send), warnings.append))
    assert imds.posts == [{"StartRequests": [{"EventId": B.lower()}]}]
    assert result["stale"] == [A] and result["approved"] == [B.lower()] and result["changed"] is True
    assert warnings == ["event %s was not approved: since it was planned, its EventType changed from Reboot to "
                        "Redeploy; the next cycle decides anew." % A]


def test_a_malformed_plan_fails_the_task_before_imds_is_asked() -> None:
    imds = FakeImds(served(event(A)))
    with pytest.raises(TaskFailed, match=r"^planned\[0\] has no event_id\.$"):
        run_approve(approve_params(event_ids=[A], planned=[{}]), LinuxVm(ImdsClient(send=imds.send), print))
    assert (imds.gets, imds.posts) == (0, [])


# ---------------------------------------------------------------- the manual approval playbook's plan

def listed(*ids: str) -> list:
    return [{"event_id": i} for i in ids]


def test_each_id_goes_once_to_the_first_host_that_lists_it_spelled_as_served() -> None:
    a, b = "602d9444-d2cd-49c7-8624-8643e7171297", "7B1E3C5A-0000-4000-8000-000000000001"
    plan = manual_approval_plan(f" {a.upper()} , {b.lower()},", {"vm0": listed(a), "vm1": listed(a, b), "vm2": []})
    assert plan == {"by_host": {"vm0": [a], "vm1": [b], "vm2": []}, "unlisted": []}


def test_an_id_no_host_lists_refuses_the_whole_request() -> None:
    a = "602d9444-d2cd-49c7-8624-8643e7171297"
    plan = manual_approval_plan([a, "00000000-0000-0000-0000-000000000000"], {"vm0": listed(a)})
    assert plan == {"by_host": {"vm0": []}, "unlisted": ["00000000-0000-0000-0000-000000000000"]}


@pytest.mark.parametrize("event_ids", [None, "", " , ", [], [""], 7, [None]])
def test_no_ids_is_one_sentence(event_ids: object) -> None:
    with pytest.raises(ApprovalRequestError, match=r"^event_ids must name at least one event id .*\.$"):
        manual_approval_plan(event_ids, {"vm0": []})
