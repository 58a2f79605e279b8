# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control plane's sightings of events folded into one view per event; pure, no I/O.

An event's status only moves forward (Scheduled, Started, then Completed or Canceled; Azure documents no way
back), but deliveries may repeat and arrive out of order: a repeat (the same delivery id) and a status behind the
one already seen are dropped, each with its reason. The same event seen through IMDS, Event Grid and Resource
Graph is one event: events are keyed by EventId, case-insensitively (IMDS serves it in capitals, the control
plane's examples in either case). An unknown status counts as under way (it never frees a host) and is never
taken as an end.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import ENDED_STATUSES

_RANK = {"Scheduled": 0, "Started": 1}
_UNKNOWN_RANK = 1
_ENDED_RANK = 2


def event_key(event_id):
    """How one event is recognised whichever way it was seen."""
    return event_id.lower()


def status_rank(status):
    if status in ENDED_STATUSES:
        return _ENDED_RANK
    return _RANK.get(status, _UNKNOWN_RANK)


def fold(sightings, view=None):
    """Sightings (notifications.from_event_grid / from_resource_graph) in arrival order -> (view, dropped).

    `view` is {event key: latest sighting} (give the previous view to go on from it; it is not changed);
    `dropped` is [{"sighting", "reason"}]. Within one status, the later `seen_at` wins (a Scheduled event whose
    NotBefore moved)."""
    view = dict(view or {})
    delivered = set(s["delivery_id"] for s in view.values() if s.get("delivery_id"))
    dropped = []
    for sighting in sightings:
        reason = _drop_reason(sighting, view.get(event_key(sighting["event"]["event_id"])), delivered)
        if reason:
            dropped.append({"sighting": sighting, "reason": reason})
            continue
        view[event_key(sighting["event"]["event_id"])] = sighting
        if sighting.get("delivery_id"):
            delivered.add(sighting["delivery_id"])
    return view, dropped


def _drop_reason(sighting, current, delivered):
    if sighting.get("delivery_id") and sighting["delivery_id"] in delivered:
        return "a repeat of delivery %s" % sighting["delivery_id"]
    if current is None:
        return None
    new, old = status_rank(sighting["event"]["event_status"]), status_rank(current["event"]["event_status"])
    if new < old or (new == old == _ENDED_RANK):
        return "%s after %s was seen: an event's status only moves forward" % (
            sighting["event"]["event_status"], current["event"]["event_status"])
    if new == old and sighting["seen_at"] < current["seen_at"]:
        return "older than the %s sighting already held" % current["event"]["event_status"]
    return None


def ended(view):
    """{event key: "Completed" | "Canceled"} of the events the control plane says are over or will not happen."""
    return dict((key, s["event"]["event_status"]) for key, s in view.items()
                if s["event"]["event_status"] in ENDED_STATUSES)
