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
    one VM at once. The C(maintenance_cycle) role takes it with the read it plans from
    (M(azure_imds.scheduled_events.scheduled_events_claim), one task), renews it (V(renewed)) before it saves,
    approves or recovers, and releases it (V(released)) at the end of the run. V(held) takes it on its own.
    M(azure_imds.scheduled_events.scheduled_events_info) only reads.
  - The lock is a JSON file (owner, acquired_at, expires_at). Every check and write happens under an exclusive
    C(flock) on C(<path>.guard), waited for at most 30 seconds, so two runs can never both take a free or
    expired lock, and a stuck process cannot hang every later run.
  - Only the owner's lock is ever released or renewed; another run's lock is left as it is.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.control_plane_transport
attributes:
  check_mode:
    support: full
    description: Judges the lock and reports what would happen; writes nothing.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: partial
    platforms: posix, windows
    description: Linux VMs (it uses C(flock)). On Windows VMs it warns that no lock is taken yet, and
      returns RV(lock.supported=false).
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
  - Reports C(changed) when it creates the lock file, takes it over from another run whose lease ended, or
    deletes it. Renewing this run's own lease (V(held) or V(renewed) on a lock it already holds) is not a change.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
  - module: azure_imds.scheduled_events.scheduled_events_approve
"""

EXAMPLES = r"""
- name: Take this run's lock before reading what to plan from (another run's live lock is not an error)
  azure_imds.scheduled_events.scheduled_events_lock:
    path: ~/.ansible/azure_imds_scheduled_events/state.json.lock
    owner: "{{ maintenance_cycle_lock_owner }}"
    state: held
    lease_seconds: 900
  register: vm_lock

- name: Leave the VM alone when another run holds it
  ansible.builtin.debug:
    msg: "{{ vm_lock.lock.message }}"
  when: vm_lock.lock.held_by is not none

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
    message:
      description: A sentence naming the other run that holds the VM.
      type: str
      returned: when another run holds the VM
    supported:
      description: False on Windows VMs, where no lock is taken yet.
      type: bool
      returned: on Windows VMs
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.lock import argument_spec, run_lock
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, run_lock)


if __name__ == "__main__":
    main()
