#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_info
short_description: Read Azure Scheduled Events from the VM's Instance Metadata Service
version_added: 0.1.0
description:
  - Reads the Scheduled Events document of the VM it runs on from the Azure Instance Metadata
    Service (IMDS), validates and normalises it, and tells which events affect this VM.
  - Optionally diffs it against an earlier result, and optionally waits inside one task until the
    document changes (IMDS recommends polling about once a second; one long task is far cheaper
    than one Ansible task per poll).
  - Runs on the managed VM, because IMDS is reachable only from inside it.
  - Changes nothing on the VM (the lease lock of a maintenance run is
    M(azure_imds.scheduled_events.scheduled_events_lock)'s). The first call of a VM enables Scheduled Events
    for it, which is Azure's side, not a change this task reports.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.imds
attributes:
  check_mode:
    support: full
    description: Only reads, so it runs the same in check mode.
  diff_mode:
    support: none
    description: Reads only; see RV(diff) for differences from O(previous).
options:
  include_instance:
    description:
      - Also read C(/metadata/instance/compute) for this VM's name, resource id, scale set, fault domain,
        update domain, zone and location (returned as RV(this_vm)).
      - When false and O(resource_name) is not set, RV(events[].affects_this_vm) is V(null).
    type: bool
    default: true
  previous:
    description:
      - An earlier result of this module (or its RV(raw) document, or a list of events) to diff against.
        The differences are returned as RV(diff).
    type: raw
  state_path:
    description:
      - Path, on the VM, of the state file the M(azure_imds.scheduled_events.scheduled_events_info) caller keeps
        between cycles (the C(maintenance_cycle) role writes it). When set and O(previous) is not, the events
        saved there are the base of RV(diff).
      - A missing file means a first cycle; an unreadable or corrupt one also starts a first cycle, with a warning.
        This module only reads it.
      - On a Linux VM whose OS disk is ephemeral (IMDS compute says so), a state file on the OS disk's filesystem
        fails the task, since a reimage or a move to another node erases it; keep it on a data disk.
    type: path
  wait_for_change:
    description:
      - Poll inside this task until C(DocumentIncarnation) differs from O(since_incarnation), or until
        O(wait_timeout) has passed.
    type: bool
    default: false
  since_incarnation:
    description:
      - The incarnation to wait to change from. Defaults to the incarnation of O(previous); without
        either, the first document read counts as the change.
    type: int
  wait_timeout:
    description:
      - Seconds O(wait_for_change) may wait. Returning unchanged at the timeout is not an error.
    type: float
    default: 300
  poll_interval:
    description:
      - Seconds between two polls while waiting.
    type: float
    default: 1
notes:
  - Every VM of an availability set or scale-set placement group sees the events of all others;
    read RV(events[].affects_this_vm) or RV(events_for_this_vm).
  - Unknown C(EventType) or C(EventStatus) values are kept, flagged and warned about, never fatal.
  - IMDS answers 200 with an empty body right after Scheduled Events is enabled; that returns
    RV(document_available=false) with a warning.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_approve
  - module: azure_imds.scheduled_events.scheduled_events_lock
"""

EXAMPLES = r"""
- name: Read this VM's scheduled events
  azure_imds.scheduled_events.scheduled_events_info:
  register: scheduled

- name: Show what affects this VM
  ansible.builtin.debug:
    msg: "{{ item.event_type }} {{ item.event_status }} in {{ item.seconds_to_not_before }} s"
  loop: "{{ scheduled.events_for_this_vm }}"

- name: Wait up to 10 minutes for the document to change, then diff
  azure_imds.scheduled_events.scheduled_events_info:
    previous: "{{ scheduled }}"
    wait_for_change: true
    wait_timeout: 600
  register: changed_events

- name: Point at the collection's simulator instead of the real IMDS
  azure_imds.scheduled_events.scheduled_events_info:
    imds_url: http://127.0.0.1:8099/avset-web-vm0
"""

RETURN = r"""
document_incarnation:
  description: C(DocumentIncarnation) of the document read; V(null) when no document was available yet.
  returned: always
  type: int
  sample: 3
document_available:
  description: False when IMDS answered with an empty body (right after enabling).
  returned: always
  type: bool
  sample: true
events:
  description: The events, normalised.
  returned: always
  type: list
  elements: dict
  contains:
    event_id:
      description: C(EventId).
      type: str
      sample: 602D9444-D2CD-49C7-8624-8643E7171297
    event_type:
      description: C(EventType) (V(Freeze), V(Reboot), V(Redeploy), V(Preempt), V(Terminate), or an unknown value).
      type: str
    event_status:
      description: C(EventStatus) (V(Scheduled), V(Started), or an unknown value).
      type: str
    resource_type:
      description: C(ResourceType).
      type: str
    resources:
      description: C(Resources), as served.
      type: list
      elements: str
    not_before:
      description: C(NotBefore) as ISO 8601 UTC, or V(null) when empty (Started events).
      type: str
      sample: '2026-01-05T00:15:12Z'
    description:
      description: C(Description); V(null) before api-version 2019-04-01.
      type: str
    event_source:
      description: C(EventSource) (V(Platform) or V(User)); V(null) before api-version 2019-08-01.
      type: str
    duration_in_seconds:
      description: C(DurationInSeconds) (V(-1) unknown, V(0) no impact); V(null) before api-version 2020-07-01.
      type: int
    known_type:
      description: Whether C(EventType) is one this collection knows.
      type: bool
    known_status:
      description: Whether C(EventStatus) is one this collection knows.
      type: bool
    affects_this_vm:
      description: Whether C(Resources) lists this VM (exact, case-insensitive); V(null) when the VM's name is unknown.
      type: bool
    seconds_to_not_before:
      description: Seconds from RV(observed_at) to C(NotBefore), negative once past; V(null) without C(NotBefore).
      type: float
events_for_this_vm:
  description: The subset of RV(events) that affects this VM.
  returned: always
  type: list
  elements: dict
this_vm:
  description: This VM, from C(/metadata/instance/compute) (when O(include_instance)) and O(resource_name).
  returned: always
  type: dict
  contains:
    name:
      description: The name matched against C(Resources).
      type: str
    resource_id:
      description: Azure resource id.
      type: str
    vm_scale_set_name:
      description: Scale set name, empty outside scale sets.
      type: str
    fault_domain:
      description: Platform fault domain.
      type: int
    update_domain:
      description: Platform update domain.
      type: int
    zone:
      description: Availability zone, empty if none.
      type: str
    location:
      description: Azure region.
      type: str
    os_type:
      description: V(Linux) or V(Windows).
      type: str
diff:
  description: Differences from O(previous), or from the events saved in O(state_path).
  returned: when O(previous) is set, or O(state_path) holds a loaded state
  type: dict
  contains:
    new:
      description: Events not in O(previous).
      type: list
      elements: dict
    started:
      description: Events now C(Started) that were not before (events first seen already C(Started) included).
      type: list
      elements: dict
    removed:
      description: Events in O(previous) that are gone (completed or cancelled).
      type: list
      elements: dict
    updated:
      description: Events in both whose other fields changed (for example C(NotBefore) moved).
      type: list
      elements: dict
    changed:
      description: Whether any of the above is non-empty.
      type: bool
    incarnation_went_backwards:
      description: True when the incarnation is lower than O(previous)'s (IMDS was disabled and re-enabled).
      type: bool
state:
  description: The state read from O(state_path), or V(null) when there was none or it was corrupt.
  returned: when O(state_path) is set
  type: dict
state_status:
  description: V(loaded), V(missing) (first cycle) or V(corrupt) (unreadable or invalid; first cycle).
  returned: when O(state_path) is set
  type: str
state_path:
  description:
    - O(state_path) as the VM sees it (V(~) expanded on Linux; on Windows a leading V(~) becomes C(%USERPROFILE%)).
      The C(maintenance_cycle) role saves the next state there.
  returned: when O(state_path) is set
  type: str
transport:
  description:
    - How IMDS was reached. V(module) when this module ran on the VM; V(win_uri) when the action plugin ran it
      on the controller for a Windows VM, through M(ansible.windows.win_uri).
  returned: always
  type: str
  sample: module
quiet:
  description:
    - True when there is nothing to do in a maintenance cycle. That is a document in which no event lists this
      VM (every VM of a set sees the events of the others, which ask nothing of it), and a saved state with no
      event either (none owed a recover) or no state file at all, so nothing to prepare, approve or recover.
    - Never true without a document (an empty 200), without this VM's name (nothing can be matched to it), nor
      with a corrupt state file, which a cycle then rewrites.
  returned: when O(state_path) is set
  type: bool
waited:
  description: How O(wait_for_change) ended.
  returned: when O(wait_for_change=true)
  type: dict
  contains:
    changed:
      description: Whether the incarnation changed before the timeout.
      type: bool
    polls:
      description: Documents read while waiting.
      type: int
    seconds:
      description: Seconds spent waiting.
      type: float
observed_at:
  description: UTC time the document was read (ISO 8601).
  returned: always
  type: str
  sample: '2026-01-05T00:00:07.412Z'
raw:
  description: The document exactly as served; V(null) when no document was available yet.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import argument_spec, run_info
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, run_info)


if __name__ == "__main__":
    main()
