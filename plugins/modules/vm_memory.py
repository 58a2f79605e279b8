# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is implemented entirely by its action plugin, on the control node.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vm_memory
short_description: Remember each VM's fault domain on the control node, for runs that cannot read it
version_added: 0.1.0
description:
  - Keeps, in a JSON file on the control node, the identity (name, fault domain, scale set, zone) that the
    cycle's own reads reported for each host, and returns what it remembers after adding this run's reads.
  - The maintenance cycle gives a host it cannot read (rebooting, evicted, or left alone with
    C(maintenance_cycle_leave_alone)) its remembered fault domain, so that it holds that fault domain only;
    a host not remembered holds every new fault domain of its set (fail closed).
  - Only the modules' reads are remembered, never an event relay's push. Entries older than O(max_age_hours)
    are forgotten. A file it cannot read is started afresh, with a warning.
  - It also remembers when a read (of this VM, or of another VM of its set) showed the VM's own Preempt or
    Terminate C(Started) (C(started_deletes) in O(seen)); a VM that has not answered for two minutes since is
    taken as deleted by the maintenance cycle. Such an entry is kept 30 days, whatever O(max_age_hours), and
    any later read of the host replaces it.
  - It is kept in the controller's state store (O(store)), a file on the control node by default, which an AWX job
    does not keep (each job runs in a fresh container, and the maintenance cycle refuses that), or a SQLite or
    PostgreSQL database that every controller and every job share.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
attributes:
  action:
    support: full
    description: Implemented entirely by its action plugin, on the control node.
  check_mode:
    support: full
    description: Reads the file and returns what it remembers; writes nothing.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: full
    platforms: posix
    description: Runs on the control node only; the target hosts are not contacted.
options:
  path:
    description:
      - The memory file on the control node (C(~) is expanded) in the default store (O(store) V(file:)); an empty
        string remembers nothing, whatever the store.
    type: str
    required: true
  store:
    description:
      - The controller's state store, as C(maintenance_cycle_state_store) names it; V(file:) (or empty) is O(path).
        In another store the memory is kept under O(target).
    type: str
    default: "file:"
  target:
    description: The target whose VMs are remembered (its key in a store other than O(path)).
    type: str
    default: azure_vms
  seen:
    description: "C({host: this_vm}) of the hosts read in this run (the C(this_vm) result of
      M(azure_imds.scheduled_events.scheduled_events_info)), each with C(started_deletes) (a list of
      C({event_id, event_type, resources})) when the read showed Preempts or Terminates Started, of any VM (the
      C(azure_imds.scheduled_events.read_vms) filter adds it)."
    type: dict
    default: {}
  max_age_hours:
    description: How long a VM's identity, or a VM outside the target, is remembered after the last read that saw it.
    type: float
    default: 24
  outside:
    description:
      - "C({set: [VM names]}) that this run's reads show listed by events of the set and that are no VM of the
        target (the C(azure_imds.scheduled_events.outside_vms) filter). Remembered per set; a name is forgotten
        once a read of this target reports it as its own VM."
    type: dict
    default: {}
  refuse_split_sets:
    description:
      - Warn, on every run, of each set with VMs outside the target (this run's or remembered); the maintenance
        cycle refuses those sets unless C(maintenance_cycle_approve_outside_inventory) is set.
    type: bool
    default: true
notes:
  - Use it with C(run_once=true). It never reports a change.
"""

EXAMPLES = r"""
- name: Remember what this run read; get what is known of the others
  azure_imds.scheduled_events.vm_memory:
    path: ~/.ansible/azure_imds_scheduled_events/vms-azure_vms.json
    seen: "{{ ansible_play_hosts_all | azure_imds.scheduled_events.read_vms(hostvars) }}"
    outside: "{{ ansible_play_hosts_all | azure_imds.scheduled_events.outside_vms(hostvars) }}"
  run_once: true
  register: known
"""

RETURN = r"""
path:
  description: Where the memory is kept, the file with C(~) expanded or the store's row ("" when off).
  returned: always
  type: str
vms:
  description: "C({host: identity}) of every host remembered, this run's reads included."
  returned: always
  type: dict
outside:
  description: "C({set: [VM names]}) outside the target, this run's included ({} when the memory is off)."
  returned: always
  type: dict
deleting:
  description: "C({host: {event_id, event_type, started_seen_at}}) of the hosts whose last read showed their own
    Preempt or Terminate Started ({} when the memory is off)."
  returned: always
  type: dict
"""
