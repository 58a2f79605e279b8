# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Azure's control plane says of a scheduled event: an Event Grid delivery or a Resource Graph row, read into
the same normalised event as an IMDS document's (document/events.py does the parsing); pure, no I/O.

Both carry the IMDS fields (PascalCase) under `properties`, plus what IMDS never shows: the statuses Completed and
Canceled, and the scope the event was published for (a VM, a scale set or an availability set, by its ARM id).
Event Grid may deliver a notification twice (same delivery id); its subject is not the same in every published
example, so the scope is read from the scheduled event's own ARM id (`data.resourceInfo.id`; a row's `id`).
Anything that does not add up is refused in one sentence (SightingError): the caller counts what it cannot read
as busy, never as free.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    ENDED_STATUSES,
    KNOWN_EVENT_STATUSES,
    DocumentError,
    iso_utc,
    normalise_event,
    parse_not_before,
)

EVENT_GRID_TYPE = "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted"
# Learn's Event Grid page gives EVENT_GRID_TYPE in its example and in the spec, and this one in its field table: a
# delivery of either is a scheduled event (were only one accepted and the table right, nothing would ever fire).
EVENT_GRID_TYPES = (EVENT_GRID_TYPE, "microsoft.maintenance/scheduledevents/write")
RESOURCE_GRAPH_TYPE = "microsoft.maintenance/scheduledevents"
# Where an event can be published, and acknowledged (Microsoft.Maintenance's path names them so).
SCOPE_TYPES = ("virtualMachines", "virtualMachineScaleSets", "availabilitySets")
_SCOPE_PART = (r"^/subscriptions/(?P<subscription>[^/]+)/resourcegroups/(?P<resource_group>[^/]+)"
               r"/providers/microsoft\.compute/(?P<scope_type>[^/]+)/(?P<scope_name>[^/]+)")
_EVENT_ID = re.compile(_SCOPE_PART + r"/providers/microsoft\.maintenance/scheduledevents/(?P<event_id>[^/]+)$",
                       re.IGNORECASE)
_SCOPE_ID = re.compile(_SCOPE_PART + "$", re.IGNORECASE)


class SightingError(ValueError):
    """A notification or row that cannot be used. The message is one sentence naming the cause."""


def from_event_grid(envelope):
    """One Event Grid delivery (the Event Grid schema or CloudEvents 1.0) -> a sighting:
    {source, delivery_id, scope, event, seen_at}. None for another event type on the topic (not ours to read)."""
    if not isinstance(envelope, dict):
        raise SightingError("The Event Grid delivery is not an object.")
    event_type = envelope.get("eventType", envelope.get("type"))
    if not isinstance(event_type, str) or event_type.lower() not in [t.lower() for t in EVENT_GRID_TYPES]:
        return None
    delivery_id = envelope.get("id")
    if not isinstance(delivery_id, str) or not delivery_id.strip():
        raise SightingError("The Event Grid delivery has no id, so a repeat of it could not be told apart.")
    data = envelope.get("data")
    info = data.get("resourceInfo") if isinstance(data, dict) else None
    if not isinstance(info, dict):
        raise SightingError("Event Grid delivery %s has no data.resourceInfo." % delivery_id)
    operational = data.get("operationalInfo") if isinstance(data.get("operationalInfo"), dict) else {}
    seen_at = operational.get("resourceEventTime") or envelope.get("eventTime", envelope.get("time"))
    return _sighting("event_grid", delivery_id, info.get("id"), info.get("properties"), seen_at)


def from_resource_graph(row, queried_at):
    """One row of Resource Graph's maintenanceresources table -> a sighting. A row carries no time of its own:
    `queried_at` (ISO 8601, when the query ran) is when it was seen; Resource Graph may lag behind Azure."""
    if not isinstance(row, dict):
        raise SightingError("The Resource Graph row is not an object.")
    if str(row.get("type", "")).lower() != RESOURCE_GRAPH_TYPE:
        raise SightingError("The Resource Graph row has type %r, not %s (query maintenanceresources | where type "
                            "== \"%s\")." % (row.get("type"), RESOURCE_GRAPH_TYPE, RESOURCE_GRAPH_TYPE))
    return _sighting("resource_graph", None, row.get("id"), row.get("properties"), queried_at)


def scope_of(arm_id):
    """A scheduled event's ARM id -> {subscription, resource_group, scope_type, scope_name, event_id}; the
    scope type in the spelling Microsoft.Maintenance's path takes."""
    match = _EVENT_ID.match(arm_id) if isinstance(arm_id, str) else None
    if not match:
        raise SightingError("%r is not a scheduled event's id (/subscriptions/.../resourceGroups/.../providers/"
                            "Microsoft.Compute/<type>/<name>/providers/Microsoft.Maintenance/scheduledevents/<id>)."
                            % (arm_id,))
    return _spelled(match.groupdict(), arm_id)


def parse_scope(arm_id):
    """The ARM id of a VM, scale set or availability set -> {subscription, resource_group, scope_type,
    scope_name}: where events are published and acknowledged."""
    match = _SCOPE_ID.match(arm_id.rstrip("/")) if isinstance(arm_id, str) else None
    if not match:
        raise SightingError("%r is not the id of a VM, scale set or availability set (/subscriptions/.../"
                            "resourceGroups/.../providers/Microsoft.Compute/<type>/<name>)." % (arm_id,))
    return _spelled(match.groupdict(), arm_id)


def _spelled(scope, arm_id):
    spelled = [t for t in SCOPE_TYPES if t.lower() == scope["scope_type"].lower()]
    if not spelled:
        raise SightingError("%r names a %s, not one of %s." % (arm_id, scope["scope_type"], ", ".join(SCOPE_TYPES)))
    scope["scope_type"] = spelled[0]
    return scope


def _sighting(source, delivery_id, arm_id, properties, seen_at):
    scope = scope_of(arm_id)
    if not isinstance(properties, dict):
        raise SightingError("The %s notification of %s has no properties." % (_SOURCES[source], arm_id))
    try:
        event = normalise_event(properties)
    except DocumentError as exc:
        raise SightingError("The %s notification of %s: %s" % (_SOURCES[source], arm_id, exc))
    if event["event_id"].lower() != scope.pop("event_id").lower():
        raise SightingError("%s carries EventId %s, which is not the event its id names." % (arm_id, event["event_id"]))
    event["known_status"] = event["event_status"] in KNOWN_EVENT_STATUSES + ENDED_STATUSES
    return {"source": source, "delivery_id": delivery_id, "scope": scope, "event": event,
            "seen_at": _moment(seen_at, "The %s notification of %s" % (_SOURCES[source], arm_id))}


def _moment(text, what):
    """ISO 8601 UTC (Event Grid's times carry 7 fractional digits)."""
    try:
        moment = parse_not_before(text) if isinstance(text, str) else None
    except DocumentError:
        moment = None
    if moment is None:
        raise SightingError("%s says not when it was seen (%r is not a date)." % (what, text))
    return iso_utc(moment)


_SOURCES = {"event_grid": "Event Grid", "resource_graph": "Resource Graph"}
