#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_claim
short_description: Claim a VM for a maintenance run, reading its scheduled events under the run's lease lock
version_added: 0.2.0
description:
  - The read a maintenance cycle plans from, in one task. It takes the run's lease lock on the VM
    (C(<state_path>.lock), as M(azure_imds.scheduled_events.scheduled_events_lock) V(held) does), then reads the
    Scheduled Events document and the saved state and diffs them, as
    M(azure_imds.scheduled_events.scheduled_events_info) does. The C(maintenance_cycle) role uses it, so that
    each host costs one module call until it is known to have work.
  - Another run's live lock is not an error. The read still happens, and RV(lock.held_by) names that run; the
    C(maintenance_cycle) role leaves such a VM alone in this run.
  - A VM with nothing to do (RV(quiet)) gets its lock back in the same task, and so does one whose read
    fails. Otherwise the run releases the lock with M(azure_imds.scheduled_events.scheduled_events_lock)
    when it is done with the VM.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.control_plane_transport
  - azure_imds.scheduled_events.imds
attributes:
  check_mode:
    support: full
    description: Reads as outside check mode; the lock is judged, not taken.
  diff_mode:
    support: none
    description: See RV(diff) for the differences from the saved state.
options:
  state_path:
    description:
      - Path, on the VM, of the state file the C(maintenance_cycle) role keeps between cycles; the lock is
        C(<state_path>.lock). A missing file means a first cycle; an unreadable or corrupt one also starts a
        first cycle, with a warning.
      - On a Linux VM whose OS disk is ephemeral (IMDS compute says so), a state file on the OS disk's filesystem
        fails the task, since a reimage or a move to another node erases it; keep it on a data disk.
    type: path
    required: true
  owner:
    description: The name of this run (the lock's owner).
    type: str
    required: true
  lease_seconds:
    description:
      - The lease of the lock, in seconds (at most 86400).
      - V(0) takes no lock (locking is off); the task is then a plain read, and RV(lock) is empty.
    type: float
    default: 900
  include_instance:
    description:
      - Also read C(/metadata/instance/compute) for this VM's name, scale set, fault domain and zone
        (RV(this_vm)). Without it and without O(resource_name), no event can be matched to this VM.
    type: bool
    default: true
notes:
  - Reports C(changed) when it leaves a lock file it created or took over from a run whose lease ended (as
    M(azure_imds.scheduled_events.scheduled_events_lock) does); a lock given back in the same task is no change.
  - Linux VMs. On Windows VMs it reads through M(ansible.windows.win_uri), warns that no lock is taken yet, and
    returns RV(lock.supported=false).
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
  - module: azure_imds.scheduled_events.scheduled_events_lock
"""

EXAMPLES = r"""
- name: Claim the VM for this run and read what to plan from
  azure_imds.scheduled_events.scheduled_events_claim:
    state_path: ~/.ansible/azure_imds_scheduled_events/state.json
    owner: "{{ maintenance_cycle_lock_owner }}"
  register: claimed

- name: End hosts with nothing to do (their lock was given back already)
  ansible.builtin.meta: end_host
  when: claimed.quiet

- name: Say which other run holds the VM
  ansible.builtin.debug:
    msg: "{{ claimed.lock.message }}"
  when: claimed.lock.held_by is not none
"""

RETURN = r"""
lock:
  description:
    - The lease lock after the task, as M(azure_imds.scheduled_events.scheduled_events_lock) returns it.
      RV(lock.taken) is false when it was given back (a quiet VM, a failed read) or another run holds the VM.
    - Empty for O(lease_seconds=0).
  returned: always
  type: dict
  contains:
    path:
      description: The lock file, C(<state_path>.lock).
      type: str
    owner:
      description: O(owner).
      type: str
    taken:
      description: Whether this run holds the lock after the task.
      type: bool
    held_by:
      description: The record of the other run that holds the lock, or V(null).
      type: dict
    released:
      description: Whether the lock was given back in this task.
      type: bool
      returned: when it was given back
    message:
      description: A sentence naming the other run that holds the VM.
      type: str
      returned: when another run holds the VM
    supported:
      description: False on Windows VMs, where no lock is taken yet.
      type: bool
      returned: on Windows VMs
quiet:
  description:
    - True when there is nothing to do in a maintenance cycle (see
      M(azure_imds.scheduled_events.scheduled_events_info)'s RV(quiet)).
  returned: always
  type: bool
events:
  description: The events, normalised (see M(azure_imds.scheduled_events.scheduled_events_info)).
  returned: always
  type: list
  elements: dict
events_for_this_vm:
  description: The subset of RV(events) that lists this VM.
  returned: always
  type: list
  elements: dict
this_vm:
  description: This VM's name, scale set, fault domain and zone.
  returned: always
  type: dict
diff:
  description: Differences from the events saved in O(state_path) (new, started, removed, updated, changed).
  returned: when O(state_path) holds a loaded state
  type: dict
state:
  description: The state read from O(state_path), or V(null) when there was none or it was corrupt.
  returned: always
  type: dict
state_status:
  description: V(loaded), V(missing) (first cycle) or V(corrupt) (unreadable or invalid; first cycle).
  returned: always
  type: str
document_incarnation:
  description: C(DocumentIncarnation) of the document read; V(null) when no document was available yet.
  returned: always
  type: int
document_available:
  description: False when IMDS answered with an empty body (right after enabling).
  returned: always
  type: bool
observed_at:
  description: UTC time the document was read (ISO 8601).
  returned: always
  type: str
raw:
  description: The document exactly as served; V(null) when no document was available yet.
  returned: always
  type: dict
transport:
  description:
    - V(module) on the VM, V(win_uri) through M(ansible.windows.win_uri) for a Windows VM, V(control_plane) on the
      controller for a host read through Azure's control plane (O(control_plane)).
  returned: always
  type: str
control_plane_ended:
  description:
    - For a host read through the control plane, the events Resource Graph shows ended for this VM, in IMDS's
      shape with C(EventStatus) V(Completed) or V(Canceled) (IMDS only stops listing an ended event). The history
      callback records them with the read.
  returned: when the control-plane read shows such events
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.claim import argument_spec, run_claim
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, run_claim)


if __name__ == "__main__":
    main()
