#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_state
short_description: Save a maintenance cycle's state file on a Linux VM
version_added: 0.1.0
description:
  - Writes the state the C(maintenance_cycle) role keeps on each VM between cycles (what was seen, prepared and
    approved; see the P(azure_imds.scheduled_events.cycle_state#filter) filter), so that a later cycle recovers what
    was prepared and never approves an event twice.
  - Refuses content that is not a valid state, writing nothing, so a later cycle never reads a state it cannot trust.
  - One step where C(ansible.builtin.file) and C(ansible.builtin.copy) take three module runs. The directory is made
    (mode 0700) if needed, and the file (mode 0600) is replaced atomically, so a reader sees the old state or the new
    one, never half of it.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.control_plane_transport
attributes:
  check_mode:
    support: full
    description: Says whether the state would change; writes nothing.
  diff_mode:
    support: full
    description: Shows the state file before and after.
  platform:
    support: full
    platforms: [posix, windows]
    description: Linux VMs run the module; for Windows VMs the action plugin saves the state with
      M(ansible.windows.win_file) and M(ansible.windows.win_copy); given O(lock_owner), it warns that no lock is kept there.
options:
  path:
    description: The state file on the VM (the role's C(maintenance_cycle_state_path)).
    type: path
    required: true
  content:
    description: The state, as JSON text (the output of the P(azure_imds.scheduled_events.cycle_state#filter) filter).
    type: str
    required: true
  lock_owner:
    description:
      - The maintenance run that holds the VM's lease lock (C(<path>.lock), taken by
        M(azure_imds.scheduled_events.scheduled_events_claim)). The lock is renewed before the state is written,
        under the lock's own guard, so a run whose lease ran out and was taken over by another fails here and
        writes nothing.
    type: str
  lease_seconds:
    description: The renewed lease, in seconds (at most 86400), with O(lock_owner).
    type: float
    default: 900
  release_lock:
    description: Release the lock after saving (the last save of a cycle), in the same step. Needs O(lock_owner).
    type: bool
    default: false
notes:
  - C(changed) only when the file's content changes; a cycle with nothing new writes nothing. Renewing or
    releasing the run's own lock is the run's bookkeeping, not a change.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
"""

EXAMPLES = r"""
- name: Save the cycle state after recover
  azure_imds.scheduled_events.scheduled_events_state:
    path: ~/.ansible/azure_imds_scheduled_events/state.json
    content: "{{ maintenance_cycle_query | azure_imds.scheduled_events.cycle_state(prepared, approved, recovered) }}"
"""

RETURN = r"""
path:
  description: The state file.
  returned: always
  type: str
  sample: /home/azureuser/.ansible/azure_imds_scheduled_events/state.json
owes_work:
  description:
    - Whether the state now on the host still owes something (an event on record, a recover to run).
    - A cycle that read the VM with no event listing it and saved a state that owes nothing left the VM quiet;
      its done report says so to the event source, which then leaves the host out of its later runs.
  returned: unless in check mode
  type: bool
  sample: false
lock:
  description: This run's lease lock after the save.
  returned: when O(lock_owner) is set
  type: dict
  contains:
    path:
      description: The lock file, C(<path>.lock).
      type: str
    owner:
      description: O(lock_owner).
      type: str
    taken:
      description: Whether this run still holds the lock (false once released, and in check mode).
      type: bool
    released:
      description: Whether the lock was released (O(release_lock)).
      type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.state_file import argument_spec, run_save


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, run_save)


if __name__ == "__main__":
    main()
