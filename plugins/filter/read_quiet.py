# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts a cycle's own read found quiet, for the event source's done report (playbooks/cycle.yml)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import is_quiet
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import DELETED


def read_quiet(hosts, hostvars):
    """The hosts of `hosts` this cycle found quiet or left quiet, by its own read (the claim,
    maintenance_cycle_query) and its own saves: the read succeeded and said quiet (no event lists the VM,
    nothing is owed in its state file), or it listed no event for the VM and the cycle's last save there
    (maintenance_cycle_saved, after its recovers) left a state that owes nothing. A host left alone, held by
    another run, whose read failed, or that this run did not read at all, is not in it: only a cycle's own read
    takes a host out of the event source's later runs (an event that came after the read is a relay's news,
    newer than the run, which keeps the host in)."""
    quiet = []
    for host in hosts or []:
        try:
            host_vars = hostvars[host]
        except KeyError:
            continue
        query = host_vars.get("maintenance_cycle_query")
        if not isinstance(query, Mapping) or query.get("failed"):
            continue
        lock = query.get("lock")
        if host_vars.get("maintenance_cycle_left_alone") or (isinstance(lock, Mapping) and lock.get("held_by")):
            continue
        if query.get("quiet") is True or _left_quiet(query, host_vars.get("maintenance_cycle_saved")):
            quiet.append(str(host))
    return sorted(quiet)


def _left_quiet(query, saved):
    """The one quiet rule (cycle/quiet.py) over this cycle's read and the state its last save left (a save
    skipped, failed or in check mode says nothing)."""
    if not isinstance(saved, Mapping) or saved.get("failed") or saved.get("skipped") \
            or not isinstance(saved.get("owes_work"), bool):
        return False
    this_vm = query.get("this_vm")
    name = this_vm.get("name") if isinstance(this_vm, Mapping) else None
    return is_quiet(query.get("document_available") is True, name, bool(query.get("events_for_this_vm", True)),
                    saved["owes_work"])


def read_deleted(hosts, hostvars):
    """The hosts of `hosts` that this cycle's plan took as deleted (status `deleted`: their own Preempt or
    Terminate was seen Started by a cycle's read, and they have not answered since; cycle/deleted.py)."""
    plan = None
    for host_vars in (hostvars[h] for h in hostvars):
        found = host_vars.get("maintenance_cycle_plan") if isinstance(host_vars, Mapping) else None
        if isinstance(found, Mapping) and isinstance(found.get("hosts"), Mapping):
            plan = found
            break
    if plan is None:
        return []
    return sorted(str(h) for h in hosts or [] if (plan["hosts"].get(h) or {}).get("status") == DELETED)


class FilterModule(object):
    def filters(self):
        return {"read_quiet": read_quiet, "read_deleted": read_deleted}
