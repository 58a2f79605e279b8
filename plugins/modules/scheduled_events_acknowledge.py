#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_acknowledge
short_description: Approve Azure Scheduled Events from outside the VM, through Microsoft.Maintenance (preview)
version_added: 0.2.0
description:
  - Acknowledges (approves) scheduled events of one VM, scale set or availability set through the
    Microsoft.Maintenance resource provider, which Azure treats as an approval from IMDS; the event then starts
    for B(every) VM it lists. One event goes to its C(acknowledge) path; several go in one list acknowledge.
  - An event that is gone (C(NotFound)) is reported in RV(gone), not as a failure. An event Azure refuses
    (C(Conflict), as for one that already started) fails the task, naming it. An event a 207 answer does not
    mention is reported in RV(unknown) and never counted as approved; the next read decides.
  - Needs the C(Scheduled Events Contributor) role on the scope. Every published api-version of the feature is
    documented by Microsoft as a preview.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.azure_auth
attributes:
  check_mode:
    support: full
    description: Sends nothing; reports the request it would send.
  diff_mode:
    support: none
    description: Returns no diff.
options:
  scope:
    description:
      - The ARM id of the VM, scale set or availability set the events were published for (the C(scope) of
        M(azure_imds.scheduled_events.scheduled_events_control_plane_info)'s events).
    type: str
    required: true
  event_ids:
    description: Ids of the events to approve.
    type: list
    elements: str
    required: true
  api_version:
    description:
      - Microsoft.Maintenance api-version. The default, C(2025-11-01), is the newest non-preview version of the
        REST specification; the single acknowledge also exists in C(2023-10-01-preview), the list form since
        C(2025-10-01-preview).
    type: str
    default: "2025-11-01"
  timeout:
    description: Seconds to wait for each HTTP answer.
    type: float
    default: 30.0
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_control_plane_info
  - module: azure_imds.scheduled_events.scheduled_events_approve
"""

EXAMPLES = r"""
- name: Approve an event from the control plane once every VM it lists is drained
  azure_imds.scheduled_events.scheduled_events_acknowledge:
    scope: "{{ item.scope }}"
    event_ids: ["{{ item.event_id }}"]
  loop: "{{ control_plane.events | selectattr('event_status', 'equalto', 'Scheduled') }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
approved:
  description: Ids Azure approved (in check mode, none; see RV(would_approve)).
  returned: always
  type: list
  elements: str
would_approve:
  description: In check mode, the ids that would be sent.
  returned: check mode
  type: list
  elements: str
gone:
  description: Ids Azure no longer knows (started and ended, or withdrawn).
  returned: always
  type: list
  elements: str
refused:
  description: Id -> the code Azure refused it with.
  returned: always
  type: dict
unknown:
  description: Ids whose fate the answer did not tell; never counted as approved.
  returned: always
  type: list
  elements: str
request:
  description: The request's method and path (relative to Resource Manager).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    acknowledge_argument_spec,
    run_acknowledge,
    azure_edges,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=acknowledge_argument_spec(), supports_check_mode=True)
    run_module(module, run_acknowledge, azure_edges)


if __name__ == "__main__":
    main()
