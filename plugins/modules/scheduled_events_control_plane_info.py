#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_control_plane_info
short_description: Read a subscription's Azure Scheduled Events from Resource Graph, without the VMs (preview)
version_added: 0.2.0
description:
  - Reads the scheduled events of one or more subscriptions from Azure Resource Graph (table
    C(maintenanceresources)), normalised exactly as M(azure_imds.scheduled_events.scheduled_events_info) normalises
    an IMDS document's events, with the statuses only the control plane shows (C(Completed), C(Canceled)).
  - Places each event's VMs on inventory hosts by their ARM ids (O(vm_ids), for example the C(azure_rm) inventory's
    C(id) host variable). A VM no host is, and a name two hosts share, are reported, never guessed; so is a row that
    cannot be parsed. Count them as busy.
  - Azure publishes scheduled events to Resource Graph only for VMs, scale sets and availability sets that opted in
    (C(scheduledEventsPolicy), feature C(SendScheduledEventsPolicy)), in preview. Resource Graph may lag behind
    Azure; RV(read_at) is when this read ran.
  - Needs read access to the subscription (for example the C(Reader) role).
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.azure_auth
attributes:
  check_mode:
    support: full
    description: Only reads.
  diff_mode:
    support: none
    description: Returns no diff.
options:
  subscriptions:
    description: Subscriptions to read; the credentials' O(subscription_id) if not given.
    type: list
    elements: str
  vm_ids:
    description: Inventory host name -> the ARM id of its VM (a uniform scale set's instance id works too).
    type: dict
    default: {}
  timeout:
    description: Seconds to wait for each HTTP answer.
    type: float
    default: 30.0
  wait_for:
    description:
      - The notification that started this run (an Event Grid delivery, as the event_grid_hosts filter gives it),
        with its C(event_id) and C(event_status). While the read does not show that event at that status or later,
        the module reads again every 5 seconds, for up to O(wait_seconds). Resource Graph can lag behind Event Grid
        by about a minute, and a read taken too soon would not see the event the run was started for.
      - Without an C(event_id), nothing is waited for.
    type: dict
  wait_seconds:
    description: How long to wait for Resource Graph to catch up with O(wait_for).
    type: float
    default: 90.0
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_acknowledge
"""

EXAMPLES = r"""
- name: Scheduled events of the subscription, placed on the inventory's Azure VMs
  azure_imds.scheduled_events.scheduled_events_control_plane_info:
    vm_ids: "{{ dict(groups['azure_vms'] | zip(groups['azure_vms'] | map('extract', hostvars, 'id'))) }}"
  delegate_to: localhost
  run_once: true
  register: control_plane
"""

RETURN = r"""
events:
  description: The events, normalised as scheduled_events_info's, each with C(scope) (the ARM id of the VM, scale
    set or availability set it was published for), C(hosts) (the inventory hosts it lists), C(seen_at) and C(source).
  returned: always
  type: list
  elements: dict
hosts:
  description: Inventory host -> ids of the events that list it.
  returned: always
  type: dict
unmapped:
  description: Event id -> names in its Resources that no host of O(vm_ids) is.
  returned: always
  type: dict
ambiguous:
  description: Event id -> {name -> the hosts that share it}.
  returned: always
  type: dict
unreadable:
  description: One sentence per row that could not be read.
  returned: always
  type: list
  elements: str
ended:
  description: Event id -> C(Completed) or C(Canceled), for events the control plane says are over or will not happen.
  returned: always
  type: dict
read_at:
  description: When this read ran (ISO 8601 UTC); Resource Graph may show events as they were before it.
  returned: always
  type: str
subscriptions:
  description: The subscriptions read.
  returned: always
  type: list
  elements: str
lagging:
  description: Whether the last read still did not show O(wait_for) (false without it).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    info_argument_spec,
    run_control_plane_info,
    azure_edges,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=info_argument_spec(), supports_check_mode=True)
    run_module(module, run_control_plane_info, azure_edges)


if __name__ == "__main__":
    main()
