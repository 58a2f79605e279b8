# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control node's memory of each VM's identity (fault domain, scale set, zone), as the cycle's own reads saw it.

A VM the cycle cannot read (rebooting, evicted, left alone because its relay says it is inside a started
event) holds a fault domain of its set. Known, it holds that one; unknown, it holds every new one of its
set (cycle/views.UNKNOWN_DOMAIN), which also stops the events of its own fault domain. So each cycle
remembers what its reads said, and the plan gives an unread host its remembered VM as `last_vm`.

Only the modules' own reads go in, never a relay's push. Entries older than max_age_hours are forgotten
(a redeployed VM may have moved); a file this code cannot read is started afresh, with a note: a VM not
remembered is unknown, which is the fail-closed side. Pure: the file work is the action plugin's.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Dict, Optional, Tuple

VERSION = 1
IDENTITY_KEYS = ("name", "resource_id", "fault_domain", "update_domain", "vm_scale_set_name", "zone", "location")


def identity(this_vm: Any) -> Optional[Dict[str, Any]]:
    """The part of a read's this_vm worth remembering; None when the read did not tell the fault domain."""
    if not isinstance(this_vm, dict) or not this_vm.get("name") or this_vm.get("fault_domain") is None:
        return None
    return {key: this_vm.get(key) for key in IDENTITY_KEYS if key in this_vm}


def update(text: Optional[str], seen: Dict[str, Any], now: datetime, max_age_hours: float
           ) -> Tuple[str, Dict[str, Dict[str, Any]], str]:
    """(text to write, {host: remembered VM} after this run's reads, a note or "").

    `text` is the file as found (None: no file yet); `seen` is {host: this_vm} of the hosts read in this run."""
    entries, note = _entries(text)
    oldest = now - timedelta(hours=max_age_hours)
    kept = {host: entry for host, entry in entries.items() if _seen_at(entry) is not None and _seen_at(entry) >= oldest}
    for host, this_vm in sorted(seen.items()):
        vm = identity(this_vm)
        if vm is not None:
            kept[host] = {"vm": vm, "seen_at": now.isoformat()}
    written = json.dumps({"version": VERSION, "vms": kept}, sort_keys=True, indent=1) + "\n"
    return written, {host: entry["vm"] for host, entry in kept.items()}, note


def _entries(text: Optional[str]) -> Tuple[Dict[str, Any], str]:
    if text is None or not text.strip():
        return {}, ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("vms"), dict):
        return {}, "the VM memory file was not one this collection wrote; it starts afresh (unread VMs are unknown)."
    return {h: e for h, e in data["vms"].items() if isinstance(e, dict) and identity(e.get("vm")) is not None}, ""


def _seen_at(entry: Dict[str, Any]) -> Optional[datetime]:
    try:
        seen = datetime.fromisoformat(str(entry.get("seen_at")))
    except ValueError:
        return None
    return seen if seen.tzinfo is not None else None
