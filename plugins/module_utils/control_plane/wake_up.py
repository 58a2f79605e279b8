# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts an Event Grid notification wakes a cycle for; pure, no I/O.

A notification only widens what a cycle looks at: the cycle still reads every host it runs on itself, and only
that read can narrow anything. So what cannot be placed on hosts exactly (a delivery that cannot be read, a VM no
host is, a name two hosts share) wakes a cycle on every expected host, never on none; a repeated delivery (the
same Event Grid id) wakes nothing more. Completed and Canceled wake the hosts too: their recovers are owed now.
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
    """-> None (not a scheduled event, or a repeat) or {"hosts", "event_id", "event_status", "reason"}.

    `index` is host_map.host_index of the VMs; `seen` is the list of delivery ids already taken (updated here,
    oldest forgotten past REMEMBERED_DELIVERIES)."""
    everyone = sorted(expected_hosts)
    try:
        sighting = from_event_grid(delivery)
    except SightingError as exc:
        return {"hosts": everyone, "event_id": None, "event_status": None,
                "reason": "%s Every expected host is looked at." % exc}
    if sighting is None:
        return None
    if sighting["delivery_id"] in seen:
        return None
    seen.append(sighting["delivery_id"])
    del seen[:-REMEMBERED_DELIVERIES]
    event = sighting["event"]
    placed = hosts_of(sighting, index)
    woken = {"hosts": placed["hosts"], "event_id": event["event_id"], "event_status": event["event_status"],
             "reason": "%s %s lists %s." % (event["event_type"], event["event_status"], ", ".join(placed["hosts"]))}
    cannot = sorted(placed["unmapped"]) + sorted(placed["ambiguous"])
    if cannot or not placed["hosts"]:
        woken.update(hosts=everyone, reason="%s %s lists %s, which %s: every expected host is looked at." % (
            event["event_type"], event["event_status"], ", ".join(cannot) or "no VM",
            "no single host is" if cannot else "leaves nothing to place"))
    return woken
