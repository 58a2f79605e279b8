# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the maintenance cycle's decisions (module_utils/cycle/) to the role and the watch playbook.

The I/O edge of the pure module: the clock, randomness and the play's host variables come in here.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle import (
    cycle_policy,
    deleted,
    plan_table,
    run_name,
    split_sets,
    transition,
    views,
    watch as watch_book,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.cycle_state import state_text
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import PolicyError


def _guard(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except PolicyError as exc:
        raise AnsibleFilterError(str(exc))


def _host_input(hostvars, host, remembered, deleting=None):
    """What the plan needs of one host: this run's read and the lock taken with it, its availability set, its last known VM (from
    an earlier round of a watch, else from the control node's memory, vm_memory), and, when the memory saw its own
    Preempt or Terminate Started, that sighting (`deleting`: the plan takes the VM as deleted if it stays silent)."""
    variables = hostvars[host]
    result = variables.get("maintenance_cycle_query")
    return {"result": result,
            "lock": result.get("lock") if isinstance(result, dict) else None,
            "availability_set": variables.get("maintenance_cycle_availability_set") or "",
            "last_vm": variables.get("maintenance_cycle_last_vm") or remembered.get(host),
            "left_alone": variables.get("maintenance_cycle_left_alone") is True,
            "deleting": (deleting or {}).get(host)}


def _target_names(hostvars, target_hosts, remembered):
    """The VM names of the target's hosts beyond this run's reads: each host's resource_name or inventory name
    (hosts outside an event-driven run's limit too) and the VMs the control node remembers reading."""
    names = [vm.get("name") for vm in (remembered or {}).values() if isinstance(vm, dict) and vm.get("name")]
    for host in target_hosts or ():
        names.append(host)
        if host in hostvars and hostvars[host].get("maintenance_cycle_resource_name"):
            names.append(hostvars[host]["maintenance_cycle_resource_name"])
    return names


def cycle_plan(hosts, hostvars, policy=None, remembered=None, remembered_outside=None, target_hosts=None,
               remembered_deleting=None):
    inputs = dict((host, _host_input(hostvars, host, remembered or {}, remembered_deleting)) for host in hosts)
    return _guard(cycle_policy.plan_cycle, inputs, dict(policy or {}), datetime.now(timezone.utc),
                  _target_names(hostvars, target_hosts, remembered), dict(remembered_outside or {}))


def outside_vms(hosts, hostvars, target_hosts=None):
    """{set: names} that this run's reads show listed by events of the set and that are no VM of the target (what
    vm_memory remembers for the split-set rule)."""
    inputs = dict((host, _host_input(hostvars, host, {})) for host in hosts)
    return split_sets.outside_vms(views.host_views(inputs), _target_names(hostvars, target_hosts, {}))


def read_vms(hosts, hostvars):
    """{host: this_vm} of the hosts this run read (what vm_memory remembers), each with `started_deletes` when the
    read showed Preempts or Terminates Started (of this VM or another: cycle/deleted.py)."""
    reads = dict((host, hostvars[host].get("maintenance_cycle_query")) for host in hosts)
    seen = {}
    for host, read in reads.items():
        if views.was_read(read) and not hostvars[host].get("maintenance_cycle_left_alone"):
            this_vm = dict(read.get("this_vm") or {})
            sightings = deleted.started_deletes(read["events"])
            seen[host] = dict(this_vm, started_deletes=sightings) if sightings else this_vm
    return seen


def cycle_plan_table(plan, hostvars, check_mode=False):
    """The plan as lines an operator reads (cycle/plan_table.py), with what each host's read saw listing its VM."""
    seen, approved_before = {}, {}
    for host in (plan or {}).get("hosts") or {}:
        read = hostvars[host].get("maintenance_cycle_query") if host in hostvars else None
        if views.was_read(read):
            listed = [e for e in read.get("events_for_this_vm") or () if isinstance(e, dict)]
            seen[host] = [e.get("event_id") for e in listed]
            approved = set(str(i).upper() for i in ((read.get("state") or {}).get("approved") or ()))
            approved_before[host] = [e.get("event_id") for e in listed if e.get("event_status") == "Scheduled"
                                     and str(e.get("event_id")).upper() in approved]
    return plan_table.plan_table(plan, seen, bool(check_mode), approved_before)


def cycle_confirm(plan, alive_hosts):
    return _guard(cycle_policy.confirm_approvals, plan, list(alive_hosts))


def cycle_state(result, prepared_now=None, approved_now=None, recovered=None, failed=False):
    state = _guard(transition.state_after, dict(result), list(prepared_now or []), list(approved_now or []),
                   list(recovered or []), bool(failed))
    return state_text(state)


def cycle_step_state(result, host_plan, step, approved_now=None):
    state = _guard(transition.state_for_step, dict(result), dict(host_plan), str(step), list(approved_now or []))
    return state_text(state)


def cycle_run_name(controller, awx_job_id=None):
    return run_name.run_name(controller, secrets.randbelow(2 ** 48), datetime.now(timezone.utc), awx_job_id)


def _now():
    return datetime.now(timezone.utc).timestamp()


def watch_start(given):
    """{settings, book}: the watch's checked settings and a host's book (the `watch` host fact)."""
    settings = _guard(watch_book.watch_settings, dict(given or {}))
    return {"settings": settings, "book": watch_book.watch_start(settings, _now())}


def watch_timing(watch, deleting=None, host="this host"):
    """This round's timing for a host, now: how long to wait, how long it has not been read, and whether, unread,
    it is taken as deleted (`deleting`: vm_memory's sighting of its own Preempt or Terminate Started)."""
    now = _now()
    unread, too_long = watch_book.watch_unread(watch["book"], watch["settings"], now)
    deleting = deleting if isinstance(deleting, dict) else None
    gone = deleted.taken_as_deleted(deleting, datetime.fromtimestamp(now, timezone.utc))
    return {"wait_seconds": watch_book.watch_wait_seconds(watch["book"], watch["settings"], now),
            "unread_seconds": round(unread), "unread_too_long": too_long and not gone, "deleted": gone,
            "deleted_note": deleted.deleted_note(str(host), deleting) if gone else ""}


def watch_after_round(watch, result):
    return dict(watch, book=watch_book.watch_after_round(watch["book"], dict(result), _now()))


def watch_done(hosts, hostvars, hosts_in_target):
    watches = [hostvars[host]["watch"] for host in hosts]
    if not watches:
        return False  # no host in the round: the next round (or the deadline) decides
    return watch_book.watch_done([w["book"] for w in watches], int(hosts_in_target), watches[0]["settings"], _now())


class FilterModule(object):
    def filters(self):
        return {"cycle_plan": cycle_plan, "cycle_confirm": cycle_confirm, "cycle_state": cycle_state, "cycle_step_state": cycle_step_state,
                "cycle_run_name": cycle_run_name, "watch_start": watch_start, "watch_timing": watch_timing,
                "watch_after_round": watch_after_round, "watch_done": watch_done, "read_vms": read_vms,
                "outside_vms": outside_vms, "cycle_plan_table": cycle_plan_table}
