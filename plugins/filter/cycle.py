# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the maintenance cycle's decisions (module_utils/cycle_policy.py) to the role.

The I/O edge of the pure module: the clock, randomness and the play's host variables come in here.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils import cycle_policy
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import state_text


def _guard(func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except cycle_policy.PolicyError as exc:
        raise AnsibleFilterError(str(exc))


def _host_input(hostvars, host):
    """What the plan needs of one host: this run's read, its availability set, its last known VM."""
    variables = hostvars[host]
    return {"result": variables.get("maintenance_cycle_query"),
            "availability_set": variables.get("maintenance_cycle_availability_set") or "",
            "last_vm": variables.get("maintenance_cycle_last_vm")}


def cycle_plan(hosts, hostvars, policy=None):
    inputs = dict((host, _host_input(hostvars, host)) for host in hosts)
    return _guard(cycle_policy.plan_cycle, inputs, dict(policy or {}), datetime.now(timezone.utc))


def cycle_confirm(plan, alive_hosts):
    return _guard(cycle_policy.confirm_approvals, plan, list(alive_hosts))


def cycle_state(result, prepared_now=None, approved_now=None, recovered=None, failed=False):
    state = _guard(cycle_policy.state_after, dict(result), list(prepared_now or []), list(approved_now or []),
                   list(recovered or []), bool(failed))
    return state_text(state)


def cycle_run_name(controller, awx_job_id=None):
    return cycle_policy.run_name(controller, secrets.randbelow(2 ** 48), datetime.now(timezone.utc), awx_job_id)


class FilterModule(object):
    def filters(self):
        return {"cycle_plan": cycle_plan, "cycle_confirm": cycle_confirm, "cycle_state": cycle_state,
                "cycle_run_name": cycle_run_name}
