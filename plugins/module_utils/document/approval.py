# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which requested approvals may be sent: pure functions, no I/O.

Approving starts an event for every VM in its Resources, so the rules are
strict: only Scheduled events, only events listing this VM (unless forced),
only against the document the decision was taken on (if asked), only events
that still match what was planned (if given), and nothing at all when the
request is wrong in any way. Ids are matched case-insensitively but sent
exactly as IMDS served them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import affects, resource_name


class ApprovalRequestError(ValueError):
    """The ids to approve could not be read; one sentence."""


def requested_ids(event_ids=None, events=None):
    """De-duplicated ids from `event_ids` or info-module/raw `events`, spelled as given (stripped).

    Ids are matched case-insensitively (the first spelling of an id wins) but never re-cased: IMDS is
    sent back exactly the string it served (see plan_approval)."""
    raw = []
    if event_ids is not None:
        raw = list(event_ids)
    for index, event in enumerate(events or []):
        value = event.get("event_id", event.get("EventId")) if isinstance(event, dict) else None
        if not isinstance(value, str):
            raise ApprovalRequestError("events[%d] has no event_id (or EventId)." % index)
        raw.append(value)
    ids, seen = [], set()
    for value in raw:
        if not isinstance(value, str) or not value.strip():
            raise ApprovalRequestError("event id %r is empty or not text." % (value,))
        if _key(value) not in seen:
            seen.add(_key(value))
            ids.append(value.strip())
    if not ids:
        raise ApprovalRequestError("no event ids to approve were given.")
    return ids


def _key(event_id):
    """How ids are compared: IMDS serves GUIDs in either case."""
    return event_id.strip().upper()


NO_MANUAL_IDS = "event_ids must name at least one event id (a list, or a comma-separated string)."


def manual_approval_plan(event_ids, events_by_host):
    """Who sends which id of a manual approval (playbooks/approve.yml): {by_host, unlisted}.

    `event_ids` is a list or a comma-separated string; `events_by_host` maps each host that was read, in
    play order, to its `events_for_this_vm`. Each id goes to the first host whose VM it lists, spelled as
    that host's IMDS served it. When some id is listed by no host that was read, nothing is approved
    (`by_host` is empty for every host): a wrong or unreadable request approves nothing."""
    if isinstance(event_ids, str):
        event_ids = event_ids.split(",")
    if not isinstance(event_ids, (list, tuple)) or not all(isinstance(i, str) for i in event_ids):
        raise ApprovalRequestError(NO_MANUAL_IDS)
    try:
        ids = requested_ids([i for i in event_ids if i.strip()])
    except ApprovalRequestError:
        raise ApprovalRequestError(NO_MANUAL_IDS)
    by_host = dict((host, []) for host in events_by_host)
    unlisted = []
    for event_id in ids:
        sender = next(((host, e["event_id"]) for host, events in events_by_host.items() for e in events or []
                       if _key(e["event_id"]) == _key(event_id)), None)
        if sender is None:
            unlisted.append(event_id)
        else:
            by_host[sender[0]].append(sender[1])
    if unlisted:
        by_host = dict((host, []) for host in events_by_host)
    return {"by_host": by_host, "unlisted": unlisted}


def planned_events(planned):
    """`planned` (the events as the caller decided on them) by id; None stays None.

    Each entry needs `event_id`, `event_type` and `resources`, as scheduled_events_info returns them."""
    if planned is None:
        return None
    by_id = {}
    for index, entry in enumerate(planned):
        if not isinstance(entry, dict) or not isinstance(entry.get("event_id"), str) or not entry["event_id"].strip():
            raise ApprovalRequestError("planned[%d] has no event_id." % index)
        if not isinstance(entry.get("event_type"), str):
            raise ApprovalRequestError("planned[%d] (event %s) has no event_type." % (index, entry["event_id"]))
        resources = entry.get("resources")
        if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
            raise ApprovalRequestError("planned[%d] (event %s) has no resources (a list of VM names)."
                                       % (index, entry["event_id"]))
        if _key(entry["event_id"]) in by_id:
            raise ApprovalRequestError("planned lists event %s more than once." % entry["event_id"])
        by_id[_key(entry["event_id"])] = entry
    return by_id


def stale_events(events, ids, planned):
    """{id: warning} for each requested id whose current event no longer matches what was planned.

    `events` are the current document's normalised events, `planned` the caller's list (see
    planned_events). Stale: a different EventType, a different set of Resources (names compared as
    events.resource_name does), or no planned entry at all. Ids not in `events` are not judged here
    (they are missing). Keys are spelled as served."""
    by_key = planned_events(planned)
    current = dict((_key(e["event_id"]), e) for e in events)
    stale = {}
    for event_id in ids:
        event = current.get(_key(event_id))
        if event is None:
            continue
        changes = _changes(by_key.get(_key(event_id)), event)
        if changes:
            stale[event["event_id"]] = ("event %s was not approved: %s; the next cycle decides anew."
                                        % (event["event_id"], changes))
    return stale


def _changes(entry, event):
    """What differs between a planned entry and the current event (one phrase), or ""."""
    if entry is None:
        return "it is not in the plan"
    changes = []
    if entry["event_type"] != event["event_type"]:
        changes.append("its EventType changed from %s to %s" % (entry["event_type"], event["event_type"]))
    before = set(resource_name(r) for r in entry["resources"])
    after = set(resource_name(r) for r in event["resources"])
    added = [r for r in event["resources"] if resource_name(r) not in before]
    removed = [r for r in entry["resources"] if resource_name(r) not in after]
    if added or removed:
        changes.append("its Resources changed (%s)" % "; ".join(
            part for part in (_listed("added", added), _listed("removed", removed)) if part))
    return "since it was planned, %s" % " and ".join(changes) if changes else ""


def _listed(what, names):
    return "%s %s" % (what, ", ".join(names)) if names else ""


@dataclass
class ApprovalPlan:
    approve: List[str] = field(default_factory=list)
    already_started: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    refused: List[str] = field(default_factory=list)
    unknown_status: List[str] = field(default_factory=list)
    stale: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    before: Dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None

    def diff(self, check_mode=False):
        after = dict(self.before)
        for event_id in self.approve:
            after[event_id] = "Started (approved)" if not check_mode else "Started (would be approved)"
        return {"before": _lines(self.before), "after": _lines(after),
                "before_header": "scheduled events", "after_header": "scheduled events"}


def _lines(statuses):
    return "".join("%s: %s\n" % (k, v) for k, v in sorted(statuses.items()))


def plan_approval(parsed, ids, vm_name, force=False, expected_incarnation=None, missing="fail", planned=None):
    """Decide what to POST for `ids` given the current parsed document.

    Every id is reported, and POSTed, as IMDS served it (the requested spelling only when the event is
    not in the document). With `planned` (see stale_events), a Scheduled event that no longer matches
    the plan is stale: not approved, reported, and no reason to fail the others."""
    by_id = dict((_key(e["event_id"]), e) for e in parsed["events"])
    stale = stale_events(parsed["events"], ids, planned) if planned is not None else {}
    plan = ApprovalPlan()
    for requested in ids:
        event = by_id.get(_key(requested))
        event_id = event["event_id"] if event else requested
        plan.before[event_id] = event["event_status"] if event else "absent"
        if event is None:
            plan.missing.append(event_id)
        elif event["event_status"] == "Started":
            plan.already_started.append(event_id)
        elif event["event_status"] != "Scheduled":
            plan.unknown_status.append(event_id)
        elif event_id in stale:
            # Before the Resources check: a plan gone stale must not fail the task, only skip the event.
            plan.stale.append(event_id)
            plan.warnings.append(stale[event_id])
        elif not force and not affects(event, vm_name):
            plan.refused.append(event_id)
        else:
            plan.approve.append(event_id)
    plan.error = _refusal(plan, parsed["document_incarnation"], vm_name, expected_incarnation, missing)
    if plan.error:
        plan.approve = []
    return plan


def _refusal(plan, incarnation, vm_name, expected_incarnation, missing):
    if expected_incarnation is not None and incarnation != expected_incarnation:
        return ("the document moved on (DocumentIncarnation %s, expected %s), so nothing was approved; "
                "read the events again and decide anew." % (incarnation, expected_incarnation))
    if plan.missing and missing == "fail":
        return ("%s not in the current document (completed, cancelled or wrong), so nothing was approved; "
                "set missing=ignore to approve the others." % _ids(plan.missing))
    if plan.refused:
        who = vm_name or "name unknown"
        return ("%s not list this VM (%s) in Resources, and approving would start it for the VMs it lists; "
                "nothing was approved (set force=true to approve anyway)." % (_ids(plan.refused, "does", "do"), who))
    if plan.unknown_status:
        return ("%s an unknown EventStatus, so nothing was approved." % _ids(plan.unknown_status, "has", "have"))
    return None


def _ids(ids, singular="is", plural="are"):
    if len(ids) == 1:
        return "event %s %s" % (ids[0], singular)
    return "events %s %s" % (", ".join(ids), plural)
