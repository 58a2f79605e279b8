# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the maintenance cycle's decisions (module_utils/cycle/) to the role and the playbooks.

The I/O edge of the pure module: the clock, randomness and the play's host variables come in here.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle import (
    deleted,
    plan_table,
    run_name,
    split_sets,
    transition,
    views,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import PolicyError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import confirm_approvals, plan_cycle, run_policy
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import state_text


# The host fact in which the role notes each host's policy, as that host's variables give it (group vars may differ).
HOST_POLICY = "maintenance_cycle_host_policy"


def _guard(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except PolicyError as exc:
        raise AnsibleFilterError(str(exc))


def _host_input(hostvars, host, remembered, deleting=None):
    """What the plan needs of one host: this run's read and the lock taken with it, its availability set, its last known VM (from
    the control node's memory, vm_memory), and, when the memory saw its own Preempt or Terminate Started, that sighting
    (`deleting`: the plan takes the VM as deleted if it stays silent)."""
    variables = hostvars[host]
    result = variables.get("maintenance_cycle_query")
    return {"result": result,
            "lock": result.get("lock") if isinstance(result, dict) else None,
            "availability_set": variables.get("maintenance_cycle_availability_set") or "",
            "last_vm": remembered.get(host),
            "left_alone": variables.get("maintenance_cycle_left_alone") is True,
            "deleting": (deleting or {}).get(host),
            # read through Resource Graph, not its VM's IMDS: its silence says nothing of whether the VM exists
            "silent_when_gone": variables.get("maintenance_cycle_transport") != "control_plane"}


def _target_names(hostvars, target_hosts, remembered):
    """The VM names of the target's hosts beyond this run's reads: each host's resource_name or inventory name
    (hosts outside an event-driven run's limit too) and the VMs the control node remembers reading."""
    names = [vm.get("name") for vm in (remembered or {}).values() if isinstance(vm, dict) and vm.get("name")]
    for host in target_hosts or ():
        names.append(host)
        if host in hostvars and hostvars[host].get("maintenance_cycle_resource_name"):
            names.append(hostvars[host]["maintenance_cycle_resource_name"])
    return names


def _host_policies(hosts, hostvars):
    """{host: policy} as each host's own variables gave it (the role notes it on every host before any read)."""
    policies = {}
    for host in hosts:
        given = hostvars[host].get(HOST_POLICY) if host in hostvars else None
        if isinstance(given, dict):
            policies[host] = dict(given)
    return policies


def cycle_plan(hosts, hostvars, policy=None, remembered=None, remembered_outside=None, target_hosts=None,
               remembered_deleting=None):
    inputs = dict((host, _host_input(hostvars, host, remembered or {}, remembered_deleting)) for host in hosts)
    return _guard(plan_cycle, inputs, dict(policy or {}), datetime.now(timezone.utc),
                  _target_names(hostvars, target_hosts, remembered), dict(remembered_outside or {}),
                  _host_policies(hosts, hostvars))


def run_policy_error(hosts, hostvars):
    """'' when the hosts' own policies agree, else the one sentence that refuses the run (cycle/plan.py's run_policy)."""
    try:
        run_policy(_host_policies(hosts, hostvars))
    except PolicyError as exc:
        return str(exc)
    return ""


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
    return _guard(confirm_approvals, plan, list(alive_hosts))


def cycle_state(result, prepared_now=None, approved_now=None, recovered=None, failed=False):
    state = _guard(transition.state_after, dict(result), list(prepared_now or []), list(approved_now or []),
                   list(recovered or []), bool(failed))
    return state_text(state)


def cycle_step_state(result, host_plan, step, approved_now=None):
    state = _guard(transition.state_for_step, dict(result), dict(host_plan), str(step), list(approved_now or []))
    return state_text(state)


def cycle_run_name(controller, awx_job_id=None):
    return run_name.run_name(controller, secrets.randbelow(2 ** 48), datetime.now(timezone.utc), awx_job_id)


class FilterModule(object):
    def filters(self):
        return {"cycle_plan": cycle_plan, "cycle_confirm": cycle_confirm, "cycle_state": cycle_state, "cycle_step_state": cycle_step_state,
                "cycle_run_name": cycle_run_name, "read_vms": read_vms,
                "outside_vms": outside_vms, "cycle_plan_table": cycle_plan_table,
                "run_policy_error": run_policy_error}
