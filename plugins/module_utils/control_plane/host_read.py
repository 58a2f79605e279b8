# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's control-plane read seen from one host: its document and compute facts, and its approval's acknowledge
requests; pure, no I/O (plugin_utils/control_plane_host.py is the adapter that does the I/O).

The cycle reads, plans and approves with the same code on every kind of host: for a host whose transport is the
control plane, the run's Resource Graph read (scheduled_events_control_plane_info's result) gives here the document
its task plans from, normalised as a document read from IMDS is (document/events.py), and the approval the
acknowledge requests. What the read cannot vouch for makes the host blind (ControlPlaneBlind): its read fails, and
the plan counts a host it could not read as busy (its fault domain held, no event that lists it approved). Fail
closed:
- a read that failed, has rows it could not parse, or is older than the age allowed (Resource Graph lags);
- a host the read did not place: no VM id, another id than the read's, a subscription it did not cover;
- a host whose VM name two hosts share;
- a host whose own Preempt or Terminate the read shows Completed beside an event that may hold its fault domain,
  or that its state has a prepare for (its VM is gone: check_present).
- an event on record in the host's state (seen, prepared or approved) which the read neither lists nor shows
  ended (Resource Graph may lag, and a read that went back in time must not undo a drain the event still needs,
  free a fault domain an event still holds, or forget an approval already sent).
A row still Scheduled after its NotBefore is served Started: Azure may have started it while Resource Graph
lagged, and Started holds the host's fault domain where Scheduled might not. Completed and Canceled events are
left out, as IMDS leaves out an event that ended; `ended_for` tells them apart for the history.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import zlib
from datetime import datetime, timezone
from email.utils import format_datetime

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import (
    HostMapError,
    identity_of,
    scale_set_of,
    vm_of,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    ENDED_STATUSES,
    KNOWN_EVENT_STATUSES,
    KNOWN_EVENT_TYPES,
    DocumentError,
    event_warnings,
)


class ControlPlaneBlind(DocumentError):
    """What the control-plane read cannot vouch for about a host: no document the host's task may trust (so it
    fails as a document that cannot be used does); the message is one sentence."""


def _moment(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def check_read(read, host, vm_id, now, max_age_s):
    """Raise ControlPlaneBlind unless `read` vouches for `host` (whose VM ARM id is `vm_id`) at `now`."""
    busy = "; %s counts as busy (unread)." % host
    if not isinstance(read, dict) or read.get("failed") or not isinstance(read.get("events"), list):
        said = read.get("msg") if isinstance(read, dict) else None
        raise ControlPlaneBlind("The control-plane read failed (%s)%s" % (said or "no read was given", busy))
    age = (now - _moment(read["read_at"])).total_seconds()
    if age > max_age_s:
        raise ControlPlaneBlind("The control-plane read is %d s old, more than the %g s allowed%s"
                                % (age, max_age_s, busy))
    if read.get("unreadable"):
        raise ControlPlaneBlind("The control-plane read has %d row(s) it could not parse, any of which may list "
                                "this host%s" % (len(read["unreadable"]), busy))
    try:
        subscription, _group, name = identity_of(host, vm_id)  # lower case, as compared
    except HostMapError as exc:
        raise ControlPlaneBlind(str(exc).rstrip(".") + busy)
    if (read.get("vm_ids") or {}).get(host, "").lower() != vm_id.lower():
        raise ControlPlaneBlind("The control-plane read did not place %s by its VM id %s%s" % (host, vm_id, busy))
    if subscription not in [s.lower() for s in read.get("subscriptions") or []]:
        raise ControlPlaneBlind("The control-plane read did not cover subscription %s%s" % (subscription, busy))
    for shared in (read.get("ambiguous") or {}).values():
        for hosts in shared.values():
            if host in hosts:
                raise ControlPlaneBlind("Events name %s's VM %s, which %s share%s"
                                        % (host, name, " and ".join(hosts), busy))
    return name


def check_owed(read, host, state):
    """Raise ControlPlaneBlind when `state` (the host's saved cycle state, or None) has an event on record (seen,
    prepared or approved) that the read does not show at all, neither listed nor ended: IMDS's absence means ended,
    Resource Graph's may only mean that this read shows an older moment than the state. Saved from such a read, the
    state would forget a drain its event still needs, or an approval already sent (which a later read, newer
    again, would then see approved a second time)."""
    shown = set(e["event_id"].lower() for e in read["events"])
    owed = sorted(set(i for i in _on_record(state) if i.lower() not in shown))
    if owed:
        raise ControlPlaneBlind("The control-plane read shows neither %s nor its end, which %s has on record "
                                "(Resource Graph may lag); %s counts as busy (unread)."
                                % (", ".join(owed), host, host))


DELETING_TYPES = ("Preempt", "Terminate")


def _on_record(state):
    """The event ids `state` (a host's saved cycle state, or None) has on record: seen, prepared or approved."""
    state = state or {}
    return [e["event_id"] for e in state.get("events") or []] + list(state.get("approved") or [])


def check_present(read, host, now, state=None):
    """Raise ControlPlaneBlind when the read shows the host's own Preempt or Terminate Completed and, for the host,
    either something else that may hold a fault domain at `now` (Started, a status this code does not know, or
    Scheduled past its NotBefore) or an event not ended that its `state` has a prepare for. Its VM is evicted or
    deleted, or deallocated and maybe started again: Resource Graph goes on listing a gone VM's events, and, read as
    the VM's, they or its drain records would count its fault domain in maintenance while no VM is, licensing
    another event to join it (the fault model's seed 1). Unread, the plan holds its last known fault domain.

    Otherwise the host is read: its own event's end reaches its state, so the owed recover runs, as on IMDS when a
    stopped VM is started again, and nothing it shows can license a join. Kept unread, a Spot VM deallocated and
    started again stayed drained for good (the fault model's spot-restart fleet-days): unread while Resource Graph
    kept the Completed row, then blind for an event on record that the read no longer showed (check_owed)."""
    mine = [e for e in read["events"] if host in e.get("hosts", [])]
    prepared = set(e["event_id"].lower() for e in (state or {}).get("events") or [] if e.get("prepare"))
    licensing = sorted(e["event_id"] for e in mine if e["event_status"] not in ENDED_STATUSES and (
        e["event_id"].lower() in prepared or _served(e, now)["event_status"] != "Scheduled"))
    for event in mine:
        if event["event_type"] in DELETING_TYPES and event["event_status"] == "Completed" and licensing:
            raise ControlPlaneBlind(
                "The control plane shows %s's own %s %s Completed: its VM is gone (evicted or deleted), and %s, which "
                "would count its fault domain in maintenance, count as no VM's; %s counts as unread."
                % (host, event["event_type"], event["event_id"], ", ".join(licensing), host))


def check_host(read, host, vm_id, now, max_age_s, state=None):
    """Raise ControlPlaneBlind unless `read` vouches for `host` at `now`, given its saved `state` (None: none is
    kept where this read is used, an approval's second look): the checks above, in this order."""
    check_read(read, host, vm_id, now, max_age_s)
    check_present(read, host, now, state)
    check_owed(read, host, state)


def _served(event, now):
    """A read's event as the host's document shows it, normalised as document/events.py's normalise_event would
    (the fields a Resource Graph row may lack at their IMDS defaults)."""
    status, not_before = event["event_status"], event["not_before"]
    if status == "Scheduled" and not_before and _moment(not_before) <= now:
        status, not_before = "Started", None  # Azure may have started it while Resource Graph lagged
    return {"event_id": event["event_id"], "event_type": event["event_type"], "event_status": status,
            "resource_type": event.get("resource_type") or "VirtualMachine", "resources": list(event["resources"]),
            "not_before": not_before, "description": event.get("description") or "",
            "event_source": event.get("event_source") or "Platform",
            "duration_in_seconds": event.get("duration_in_seconds"),
            "known_type": event["event_type"] in KNOWN_EVENT_TYPES, "known_status": status in KNOWN_EVENT_STATUSES}


def _recorded(event):
    """A served event as the history records a document's events (IMDS's shape: PascalCase, NotBefore in RFC 1123,
    '' once Started), so that a history reads alike whichever way its hosts were read."""
    not_before = event["not_before"]
    raw = {"EventId": event["event_id"], "EventType": event["event_type"], "EventStatus": event["event_status"],
           "ResourceType": event["resource_type"], "Resources": list(event["resources"]),
           "NotBefore": format_datetime(_moment(not_before), usegmt=True) if not_before else "",
           "Description": event["description"], "EventSource": event["event_source"]}
    if event["duration_in_seconds"] is not None:
        raw["DurationInSeconds"] = event["duration_in_seconds"]
    return raw


def document_for(read, host, now):
    """`host`'s document from a read check_read vouched for, as parse_document gives one: {document_incarnation,
    events, warnings, raw}, `raw` the record the history keeps. The incarnation is a checksum of the events: it
    changes when they do, as IMDS's counter does."""
    events = [_served(e, now) for e in read["events"]
              if host in e.get("hosts", []) and e["event_status"] not in ENDED_STATUSES]
    events.sort(key=lambda e: e["event_id"].lower())
    recorded = [_recorded(e) for e in events]
    incarnation = zlib.crc32(repr(recorded).encode("utf-8")) if recorded else 0
    return {"document_incarnation": incarnation, "events": events,
            "warnings": [w for e in events for w in event_warnings(e)],
            "raw": {"DocumentIncarnation": incarnation, "Events": recorded}}


def ended_for(read, host, now):
    """The events the read shows ended (Completed or Canceled) for `host`, as the history records them: kept apart
    from the document (IMDS leaves an ended event out), for the history, where they tell a completion from a
    cancellation."""
    return [_recorded(_served(e, now)) for e in read["events"]
            if host in e.get("hosts", []) and e["event_status"] in ENDED_STATUSES]


def facts_for(host, vm_id, fault_domain, zone=""):
    """The `this_vm` facts (document/events.py's compute_facts) from the VM's ARM id (name, scale set) and the fault
    domain and zone the inventory gives. Unknown, a fault domain holds every new fault domain of its set. A scale
    set's fault domain numbers repeat in each of its zones, so one given without the zone is not used: two VMs of
    fault domain 0 in two zones must never be taken for one fault domain."""
    scale_set = scale_set_of(vm_id)
    known = fault_domain not in (None, "") and (zone not in (None, "") or not scale_set)
    return {"name": vm_of(host, vm_id)[2], "resource_id": vm_id, "vm_scale_set_name": scale_set,
            "fault_domain": _whole(str(fault_domain)) if known else None, "update_domain": None,
            "zone": str(zone) if zone not in (None, "") else "", "location": "", "os_type": ""}


def _whole(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def acknowledgements(read, host, event_ids):
    """{scope ARM id: [event ids]} for approving `event_ids` from the control plane; an id the read has not placed
    on `host` raises ControlPlaneBlind (nothing is acknowledged for an event the read cannot vouch for)."""
    scopes = dict((e["event_id"].lower(), e["scope"]) for e in read["events"] if host in e.get("hosts", []))
    grouped = {}
    for event_id in event_ids:
        scope = scopes.get(event_id.lower())
        if scope is None:
            raise ControlPlaneBlind("The control-plane read does not list event %s on %s, so it is not "
                                    "acknowledged." % (event_id, host))
        grouped.setdefault(scope, []).append(event_id)
    return grouped
