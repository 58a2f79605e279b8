# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the maintenance-cycle policy (module_utils/cycle_policy.py) to the role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils import cycle_policy


def _guard(func, *args):
    try:
        return func(*args)
    except cycle_policy.PolicyError as exc:
        raise AnsibleFilterError(str(exc))


def cycle_plan(results, policy=None):
    return _guard(cycle_policy.plan_cycle, dict(results), dict(policy or {}))


def cycle_confirm(plan, alive_hosts):
    return _guard(cycle_policy.confirm_approvals, plan, list(alive_hosts))


def cycle_state(result, prepared_now=None, approved_now=None, progress=True):
    if not progress:
        return _guard(cycle_policy.remembered_state, result)
    return _guard(cycle_policy.cycle_state, result, list(prepared_now or []), list(approved_now or []))


class FilterModule(object):
    def filters(self):
        return {"cycle_plan": cycle_plan, "cycle_confirm": cycle_confirm, "cycle_state": cycle_state}
