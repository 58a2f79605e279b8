#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_lock
short_description: Take, renew or release a maintenance run's lease lock on a Linux VM
version_added: 0.1.0
description:
  - A maintenance run holds a lease lock on each VM it works on, so that two runs (an AWX job without
    C(allow_simultaneous=false), a cron overlap, a second controller) never prepare, approve or save state on
    one VM at once. M(azure_imds.scheduled_events.scheduled_events_info) takes it
    (O(azure_imds.scheduled_events.scheduled_events_info#module:lock_path)) before it reads;
    M(azure_imds.scheduled_events.scheduled_events_approve) renews it before it POSTs; this module releases it
    at the end of the run, and can also take or renew it on its own.
  - The lock is a JSON file (owner, acquired_at, expires_at). Every check and write happens under an exclusive
    C(flock) on C(<path>.guard), so two runs can never both take a free or expired lock.
  - Only the owner's lock is ever released or renewed; another run's lock is left as it is.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
attributes:
  check_mode:
    support: full
    description: Judges the lock and reports what would happen; writes nothing.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: full
    platforms: posix
    description: Linux VMs (it uses C(flock)); the role takes no VM lock on Windows VMs.
options:
  path:
    description: The lock file on the VM (the C(maintenance_cycle) role uses C(<state path>.lock)).
    type: path
    required: true
  owner:
    description: The name of this run.
    type: str
    required: true
  state:
    description:
      - V(held) takes the lock (free, expired or already this run's); when another run holds it, the task does
        not fail and RV(lock.held_by) names that run.
      - V(renewed) renews this run's lock, and fails when this run no longer holds it.
      - V(released) deletes the lock if it is this run's.
    type: str
    choices: [held, renewed, released]
    default: released
  lease_seconds:
    description: The lease, in seconds, for V(held) and V(renewed) (at most 86400).
    type: float
    default: 900
notes:
  - Taking, renewing and releasing the lock are bookkeeping, not reported as changes.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
  - module: azure_imds.scheduled_events.scheduled_events_approve
"""

EXAMPLES = r"""
- name: Release this run's lock (another run's lock stays)
  azure_imds.scheduled_events.scheduled_events_lock:
    path: ~/.ansible/azure_imds_scheduled_events/state.json.lock
    owner: "{{ maintenance_cycle_lock_owner }}"
    state: released
"""

RETURN = r"""
lock:
  description: The lock after the task.
  returned: always
  type: dict
  contains:
    path:
      description: O(path).
      type: str
    owner:
      description: O(owner).
      type: str
    taken:
      description: Whether this run holds the lock now (for V(held) and V(renewed); false in check mode).
      type: bool
    held_by:
      description: The record of the other run that holds the lock, or null.
      type: dict
    released:
      description: Whether this run's lock was deleted (V(released)).
      type: bool
      returned: when O(state=released)
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lock_file import update_under_guard
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.module_support import (
    TaskEdges,
    TaskFailed,
    lock_step,
)

STEPS = {"held": "claim", "renewed": "refresh", "released": "release"}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            owner=dict(type="str", required=True),
            state=dict(type="str", choices=sorted(STEPS), default="released"),
            lease_seconds=dict(type="float", default=900.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["path"] or not params["owner"]:
        module.fail_json(msg="path and owner must not be empty.")
    lock_params = dict(lock_path=params["path"], lock_owner=params["owner"], lock_seconds=params["lease_seconds"])
    edges = TaskEdges(warn=module.warn, update_lock=update_under_guard)
    try:
        lock = lock_step(STEPS[params["state"]], lock_params, edges, module.check_mode)
    except TaskFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(changed=False, lock=lock)


if __name__ == "__main__":
    main()
