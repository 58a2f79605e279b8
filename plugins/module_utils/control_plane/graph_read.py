# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Resource Graph answer read into the run's control-plane read; pure, no I/O.

The read is what scheduled_events_control_plane_info returns and what host_read.py checks for each host: every
event once (folded by EventId), the hosts it lists, what could not be placed (unmapped, ambiguous) or parsed
(unreadable), the ended ones, when the read ran, what it covered (subscriptions) and which hosts it placed
(`vm_ids`): what it placed is all it can vouch for.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.event_view import (
    event_key,
    fold,
    status_rank,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import hosts_of
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    SightingError,
    from_resource_graph,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import ENDED_STATUSES


def scope_id(scope):
    """A parsed scope (notifications.parse_scope) as the ARM id acknowledge is sent to."""
    return ("/subscriptions/%(subscription)s/resourceGroups/%(resource_group)s/providers/Microsoft.Compute/"
            "%(scope_type)s/%(scope_name)s" % scope)


def read_of_rows(rows, read_at, subscriptions, vm_ids, index, warn):
    """Resource Graph `rows` (maintenanceresources), read at `read_at` (ISO 8601) over `subscriptions`, placed on the
    hosts of `vm_ids` ({host: VM ARM id}; `index` its host_map.host_index). `warn` hears each row it cannot parse."""
    sightings, unreadable = [], []
    for row in rows:
        try:
            sightings.append(from_resource_graph(row, read_at))
        except SightingError as exc:
            unreadable.append(str(exc))
            warn(str(exc) + " It counts as an event on every host it might list.")
    view = fold(sightings)[0]
    events, hosts, unmapped, ambiguous = [], {}, {}, {}
    for sighting in sorted(view.values(), key=lambda s: s["event"]["event_id"]):
        event_id = sighting["event"]["event_id"]
        placed = hosts_of(sighting, index)
        events.append(dict(sighting["event"], scope=scope_id(sighting["scope"]), seen_at=sighting["seen_at"],
                           source=sighting["source"], hosts=placed["hosts"]))
        for host in placed["hosts"]:
            hosts.setdefault(host, []).append(event_id)
        if placed["unmapped"]:
            unmapped[event_id] = placed["unmapped"]
        if placed["ambiguous"]:
            ambiguous[event_id] = placed["ambiguous"]
    ended = dict((s["event"]["event_id"], s["event"]["event_status"]) for s in view.values()
                 if s["event"]["event_status"] in ENDED_STATUSES)
    return {"events": events, "hosts": hosts, "unmapped": unmapped, "ambiguous": ambiguous, "unreadable": unreadable,
            "ended": ended, "read_at": read_at, "subscriptions": list(subscriptions), "vm_ids": dict(vm_ids)}


def lags_behind(read, notified):
    """Whether the read shows an older moment than a notification (an Event Grid delivery's {"event_id",
    "event_status"}, or None): the event is not in the read at all, or at an earlier status. A cycle an Event Grid
    notification started reads Resource Graph, which may lag behind Event Grid by about a minute; read too soon, it
    would not see the event it was started for. A notification without an event id (one that could not be parsed)
    waits for nothing."""
    event_id = str((notified or {}).get("event_id") or "")
    if not event_id:
        return False
    shown = [status_rank(e["event_status"]) for e in read["events"] if event_key(e["event_id"]) == event_key(event_id)]
    return not shown or max(shown) < status_rank((notified or {}).get("event_status"))
