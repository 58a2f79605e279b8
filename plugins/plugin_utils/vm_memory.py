# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control node's memory of each VM's identity (fault domain, scale set, zone), as the cycle's own reads saw it.

A VM the cycle cannot read (rebooting, evicted, left alone because its relay says it is inside a started
event) holds a fault domain of its set. Known, it holds that one; unknown, it holds every new one of its
set (cycle/views.UNKNOWN_DOMAIN), which also stops the events of its own fault domain. So each cycle
remembers what its reads said, and the plan gives an unread host its remembered VM as `last_vm`.

It also remembers, per set, the VMs that events of the set listed and that are no VM of the target
(cycle/split_sets.py): a set split over runs is refused for as long as they are remembered, since the danger
(the other run's drain, which this run cannot see) comes after the event that showed them is gone. A name
becomes the target's own once a read of this target reports it.

It remembers, too, when a read (of any VM of the target) showed a VM's own Preempt or Terminate Started
(`deleting`, cycle/deleted.py):
a VM that has not answered since is then taken as deleted, and such an entry is kept DELETED_KEPT_DAYS, not
max_age_hours, so that a deleted VM left in the inventory does not turn unknown (and block its whole set) a day
later. Any later read of the host replaces it.

Only the modules' own reads go in, never a relay's push. Entries older than max_age_hours are forgotten
(a redeployed VM may have moved); a file this code cannot read is started afresh, with a note: a VM not
remembered is unknown, which is the fail-closed side. Pure: the file work is the action plugin's.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.deleted import (
    own_delete_started,
    parse_moment as _moment,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import resource_name

VERSION = 1
DELETED_KEPT_DAYS = 30
IDENTITY_KEYS = ("name", "resource_id", "fault_domain", "update_domain", "vm_scale_set_name", "zone", "location")


def identity(this_vm: Any) -> Optional[Dict[str, Any]]:
    """The part of a read's this_vm worth remembering; None when the read did not tell the fault domain."""
    if not isinstance(this_vm, dict) or not this_vm.get("name") or this_vm.get("fault_domain") is None:
        return None
    return {key: this_vm.get(key) for key in IDENTITY_KEYS if key in this_vm}


class Memory(NamedTuple):
    text: str  # the file to write
    vms: Dict[str, Dict[str, Any]]  # {host: remembered VM}, this run's reads included
    note: str  # why the file started afresh, or ""
    outside: Dict[str, List[str]]  # {set: names of VMs outside the target that its events listed}
    deleting: Dict[str, Dict[str, Any]]  # {host: {event_id, event_type, started_seen_at}}: its own delete Started


def update(text: Optional[str], seen: Dict[str, Any], now: datetime, max_age_hours: float,
           outside: Optional[Dict[str, List[str]]] = None) -> Memory:
    """What the memory holds after this run. `text` is the file as found (None: no file yet); `seen` is
    {host: this_vm} of the hosts read in this run (with `started_deletes`, cycle/deleted.started_deletes: the
    Preempts and Terminates the read showed Started, of any VM); `outside` is {set: names} its reads showed outside
    the target. A sighting is remembered for the host whose VM it lists, read in this run or remembered."""
    entries, found_outside, note = _entries(text)
    oldest = now - timedelta(hours=max_age_hours)
    kept = {host: entry for host, entry in entries.items() if _kept(entry, oldest, now)}
    for host, this_vm in sorted(seen.items()):
        vm = identity(this_vm)
        if vm is not None:
            kept[host] = {"vm": vm, "seen_at": now.isoformat()}  # a read replaces all: a sighting too, unless below
    sightings = [s for this_vm in seen.values() if isinstance(this_vm, dict)
                 for s in (this_vm.get("started_deletes") or []) if isinstance(s, dict)]
    for host, entry in kept.items():
        sighting = own_delete_started(sightings, entry["vm"]["name"])
        if sighting:
            entry["deleting"] = _deleting(sighting, entries.get(host), now)
    own = {resource_name(entry["vm"]["name"]) for entry in kept.values()}
    sets: Dict[str, Dict[str, str]] = {}
    for key, names in found_outside.items():
        sets[key] = {n: at for n, at in names.items() if _moment(at) is not None and _moment(at) >= oldest}
    for key, names in (outside or {}).items():
        sets.setdefault(key, {}).update((n, now.isoformat()) for n in names)
    sets = {key: {n: at for n, at in names.items() if resource_name(n) not in own} for key, names in sets.items()}
    sets = {key: names for key, names in sets.items() if names}
    return Memory(file_text(kept, sets), {host: entry["vm"] for host, entry in kept.items()}, note,
                  {key: sorted(names) for key, names in sorted(sets.items())},
                  {host: entry["deleting"] for host, entry in kept.items() if isinstance(entry.get("deleting"), dict)})


def file_text(vms: Dict[str, Dict[str, Any]], outside: Dict[str, Dict[str, str]]) -> str:
    """The file: one VM a line (a person greps it), each line written by json's C encoder. An indented dump goes
    through the pure-Python one, which was a third of a scheduled fleet-day in the fault model (`make invariants`)."""
    entries = ",\n".join(" %s: %s" % (json.dumps(host), json.dumps(vms[host], sort_keys=True)) for host in sorted(vms))
    head = '{"version": %s, "outside": %s, "vms": {' % (json.dumps(VERSION), json.dumps(outside, sort_keys=True))
    return head + ("\n%s\n" % entries if entries else "") + "}}\n"


def _kept(entry: Dict[str, Any], oldest: datetime, now: datetime) -> bool:
    seen_at = _seen_at(entry)
    if seen_at is None:
        return False
    deleting = isinstance(entry.get("deleting"), dict)
    return seen_at >= (now - timedelta(days=DELETED_KEPT_DAYS) if deleting else oldest)


def _deleting(sighting: Dict[str, str], before: Any, now: datetime) -> Dict[str, str]:
    """What to remember of a sighting of the VM's own delete Started: when it was first seen Started."""
    earlier = before.get("deleting") if isinstance(before, dict) else None
    if isinstance(earlier, dict) and str(earlier.get("event_id", "")).upper() == sighting["event_id"].upper() \
            and _moment(earlier.get("started_seen_at")) is not None:
        return dict(earlier)
    return {"event_id": sighting["event_id"], "event_type": str(sighting.get("event_type", "")),
            "started_seen_at": now.isoformat()}


def _entries(text: Optional[str]) -> Tuple[Dict[str, Any], Dict[str, Dict[str, str]], str]:
    if text is None or not text.strip():
        return {}, {}, ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("vms"), dict):
        return {}, {}, "the VM memory file was not one this collection wrote; it starts afresh (unread VMs are unknown)."
    outside = data.get("outside") if isinstance(data.get("outside"), dict) else {}
    sets = {key: {str(n): str(at) for n, at in names.items()} for key, names in outside.items() if isinstance(names, dict)}
    return {h: e for h, e in data["vms"].items() if isinstance(e, dict) and identity(e.get("vm")) is not None}, sets, ""


def _seen_at(entry: Dict[str, Any]) -> Optional[datetime]:
    return _moment(entry.get("seen_at"))
