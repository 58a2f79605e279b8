# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A VM deleted by its own Preempt or Terminate: when silence may be taken as deletion; pure, no I/O.

A VM the cycle cannot read holds its fault domain (what the plan cannot see is busy). A Spot VM evicted with
the Delete policy, or a scale-set instance removed by a Terminate, never answers again, so it would hold its
fault domain for as long as it stays in the inventory, and the set would lose every early approval. So the
control node remembers (vm_memory) when one of the cycle's own reads (the VM's, or usually another VM's of its
set: a VM being deleted rarely answers) showed the VM's own Preempt or Terminate Started, and a VM that has
not answered since, DELETED_AFTER_S later, is taken as deleted: it holds no fault domain, and leaves the runs.
Silence alone never does that (an unconfirmed silence stays busy), nor a relay's or the control plane's word:
only the cycle's own read of the Started event. A Spot VM evicted with the Deallocate policy is stopped, not
deleted: it stays out until someone starts it, and its first read then makes it an ordinary host again (its
owed recovers run).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from datetime import datetime

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import affects

DELETING_TYPES = ("Preempt", "Terminate")
# From the read that saw the event Started: Azure deletes an evicted or terminated VM within about a minute of
# the start; twice that leaves room for a slow deletion before the VM's silence is taken as it.
DELETED_AFTER_S = 120


def started_deletes(events):
    """[{event_id, event_type, resources}] of the Started Preempts and Terminates a read shows. A VM being deleted
    rarely answers, so the sighting usually comes from another VM of its set, whose document shows the event too."""
    return [{"event_id": event["event_id"], "event_type": event["event_type"], "resources": list(event["resources"])}
            for event in events or ()
            if isinstance(event, dict) and event.get("event_type") in DELETING_TYPES
            and event.get("event_status") == "Started" and isinstance(event.get("resources"), list)]


def own_delete_started(sightings, vm_name):
    """{event_id, event_type} of a sighting (started_deletes) that lists `vm_name`, or None."""
    for sighting in sightings or ():
        if isinstance(sighting, dict) and isinstance(sighting.get("event_id"), str) \
                and isinstance(sighting.get("resources"), list) and affects(sighting, vm_name):
            return {"event_id": sighting["event_id"], "event_type": str(sighting.get("event_type", ""))}
    return None


def taken_as_deleted(deleting, now):
    """Whether a VM remembered with `deleting` ({event_id, event_type, started_seen_at}) that this cycle could not
    read counts as deleted at `now`."""
    seen_at = parse_moment((deleting or {}).get("started_seen_at"))
    return seen_at is not None and (now - seen_at).total_seconds() >= DELETED_AFTER_S


def deleted_note(host, deleting):
    deleting = deleting or {}
    return ("%s is taken as deleted: its own %s %s was seen Started at %s and it has not answered since; it holds "
            "no fault domain and leaves the runs (a VM stopped, not deleted, comes back with its first read)."
            % (host, deleting.get("event_type"), deleting.get("event_id"), deleting.get("started_seen_at")))


def parse_moment(text):
    """An ISO 8601 time with its zone, as the control node's memory writes them; None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
