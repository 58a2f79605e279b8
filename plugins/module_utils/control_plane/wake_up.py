# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts an Event Grid notification wakes a cycle for; pure, no I/O.

A notification only widens what a cycle looks at, never narrows it: so each one wakes a cycle on every expected
host, not only on those it lists. The fault-domain limit needs the state of every host that may be in
maintenance, and nothing in a notification says which hosts still owe a recover: a cycle on the listed hosts alone
drained a second fault domain while a host of another, its event gone, was still drained (the fault model, Event
Grid kind, 2026-11-28; the relay path knows each VM's owed recovers from its relay, Event Grid does not). The
listed hosts are kept apart (`listed`) for the log. A repeated delivery (the same Event Grid id) wakes nothing
more. Completed and Canceled wake the hosts too: their recovers are owed now.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import hosts_of
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    SightingError,
    from_event_grid,
)

REMEMBERED_DELIVERIES = 10000  # Event Grid repeats a delivery soon after, if at all; bounded memory for a long run


def hosts_to_wake(delivery, index, expected_hosts, seen):
    """-> None (not a scheduled event, or a repeat) or {"hosts", "listed", "event_id", "event_status", "reason"}.

    `index` is host_map.host_index of the VMs; `seen` is the list of delivery ids already taken (updated here,
    oldest forgotten past REMEMBERED_DELIVERIES)."""
    everyone = sorted(expected_hosts)
    try:
        sighting = from_event_grid(delivery)
    except SightingError as exc:
        return {"hosts": everyone, "listed": [], "event_id": None, "event_status": None,
                "reason": "%s Every expected host is looked at." % exc}
    if sighting is None:
        return None
    if sighting["delivery_id"] in seen:
        return None
    seen.append(sighting["delivery_id"])
    del seen[:-REMEMBERED_DELIVERIES]
    event = sighting["event"]
    placed = hosts_of(sighting, index)
    cannot = sorted(placed["unmapped"]) + sorted(placed["ambiguous"])
    if cannot or not placed["hosts"]:
        listed = "%s, which %s" % (", ".join(cannot) or "no VM", "no single host is" if cannot else "leaves nothing to place")
    else:
        listed = ", ".join(placed["hosts"])
    return {"hosts": everyone, "listed": placed["hosts"], "event_id": event["event_id"],
            "event_status": event["event_status"],
            "reason": "%s %s lists %s: every expected host is looked at." % (
                event["event_type"], event["event_status"], listed)}
