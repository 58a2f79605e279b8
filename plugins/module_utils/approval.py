# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which requested approvals may be sent: pure functions, no I/O.

Approving starts an event for every VM in its Resources, so the rules are
strict: only Scheduled events, only events listing this VM (unless forced),
only against the document the decision was taken on (if asked), and nothing
at all when the request is wrong in any way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.events import affects


class ApprovalRequestError(ValueError):
    """The ids to approve could not be read; one sentence."""


def requested_ids(event_ids=None, events=None):
    """Upper-cased, de-duplicated ids from `event_ids` or info-module/raw `events`."""
    raw = []
    if event_ids is not None:
        raw = list(event_ids)
    for index, event in enumerate(events or []):
        value = event.get("event_id", event.get("EventId")) if isinstance(event, dict) else None
        if not isinstance(value, str):
            raise ApprovalRequestError("events[%d] has no event_id (or EventId)." % index)
        raw.append(value)
    ids = []
    for value in raw:
        if not isinstance(value, str) or not value.strip():
            raise ApprovalRequestError("event id %r is empty or not text." % (value,))
        if value.strip().upper() not in ids:
            ids.append(value.strip().upper())
    if not ids:
        raise ApprovalRequestError("no event ids to approve were given.")
    return ids


@dataclass
class ApprovalPlan:
    approve: List[str] = field(default_factory=list)
    already_started: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    refused: List[str] = field(default_factory=list)
    unknown_status: List[str] = field(default_factory=list)
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


def plan_approval(parsed, ids, vm_name, force=False, expected_incarnation=None, missing="fail"):
    """Decide what to POST for `ids` given the current parsed document."""
    by_id = dict((e["event_id"].upper(), e) for e in parsed["events"])
    plan = ApprovalPlan()
    for event_id in ids:
        event = by_id.get(event_id)
        plan.before[event_id] = event["event_status"] if event else "absent"
        if event is None:
            plan.missing.append(event_id)
        elif event["event_status"] == "Started":
            plan.already_started.append(event_id)
        elif event["event_status"] != "Scheduled":
            plan.unknown_status.append(event_id)
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
