#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduled_events_approve
short_description: Approve (start early) Azure Scheduled Events from the VM
version_added: 0.1.0
description:
  - Approves one or more Scheduled Events in a single C(StartRequests) POST to the VM's Instance
    Metadata Service (IMDS), so that Azure starts them now instead of at C(NotBefore).
  - Reads the current document first. An event in C(Scheduled) is approved; one already C(Started) is
    reported and not sent again; one no longer in the document is reported as missing.
  - Approving starts the event for B(every) VM in its C(Resources), not only this one. So the module
    refuses events whose C(Resources) do not list this VM unless O(force=true), and can refuse when the
    document changed since you decided (O(expected_incarnation)).
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
extends_documentation_fragment:
  - azure_imds.scheduled_events.control_plane_transport
  - azure_imds.scheduled_events.imds
attributes:
  check_mode:
    support: full
    description: Reads the document and reports what would be sent; sends nothing.
  diff_mode:
    support: full
    description: Shows each event's status before and after.
options:
  event_ids:
    description:
      - Ids of the events to approve (C(EventId), matched case-insensitively). IMDS is always sent each id
        exactly as it served it.
      - Give this or O(events).
    type: list
    elements: str
  events:
    description:
      - Events to approve, as returned by M(azure_imds.scheduled_events.scheduled_events_info)
        (RV(azure_imds.scheduled_events.scheduled_events_info#module:events)) or raw IMDS events.
      - Give this or O(event_ids).
    type: list
    elements: dict
  planned:
    description:
      - The events as the caller planned them when it decided to approve them, for example the
        RV(azure_imds.scheduled_events.scheduled_events_info#module:events) of an earlier read. Each item needs
        C(event_id), C(event_type) and C(resources), as M(azure_imds.scheduled_events.scheduled_events_info)
        returns them; other keys are ignored.
      - An event whose C(EventType) or set of C(Resources) (names compared case-insensitively, ignoring the
        leading underscore of api-version 2017-03-01) differs from its planned item, and a requested id with
        no planned item, is B(stale). It is not approved, is listed in RV(stale) with a warning saying what
        changed, and does not fail the task; the other events go ahead.
      - Only C(Scheduled) events are judged; ids already C(Started) or not in the document are reported as usual.
      - Without this option no event is stale.
    type: list
    elements: dict
  missing:
    description:
      - What to do with ids that are not in the current document (already completed, cancelled, or wrong).
      - V(fail) fails the task before anything is sent; V(ignore) approves the others.
    type: str
    choices: [fail, ignore]
    default: fail
  force:
    description:
      - Approve events whose C(Resources) do not list this VM. Any VM of the availability set or scale set
        may approve, and the event then starts for every VM it lists.
    type: bool
    default: false
  expected_incarnation:
    description:
      - Refuse to approve anything when the document's C(DocumentIncarnation) is not this value, for
        example because an event was added or started since the decision was taken.
    type: int
  wait_for_start:
    description:
      - After approving, poll until every approved event is C(Started) or gone.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds O(wait_for_start) may wait before the task fails.
    type: float
    default: 120
  poll_interval:
    description:
      - Seconds between polls while waiting.
    type: float
    default: 1
  state_path:
    description:
      - The maintenance cycle's state file on the VM, as the cycle's read returned it
        (RV(azure_imds.scheduled_events.scheduled_events_claim#module:state_path)).
      - When set, the ids about to be sent are recorded there as approved B(before) the POST (write-ahead), in
        the same step that renews the lock of O(lock_owner). A run killed or a connection lost around the POST
        never sends them again, and a run whose lease ran out (its VM taken over by another run) sends nothing.
      - A state file this module cannot trust (damaged, or of a newer version), or one it cannot write, fails the
        task before anything is sent.
      - On Windows VMs the state is read with M(ansible.windows.slurp) and written with M(ansible.windows.win_copy);
        they keep no lock, so nothing is renewed there.
    type: path
  lock_owner:
    description:
      - This run's lock owner name, when it holds the VM's lock (C(<state_path>.lock)); see O(state_path).
      - Windows VMs keep no VM lock, so there the task warns and records the approval without one.
    type: str
  lease_seconds:
    description:
      - The lease the renewed lock gets (O(lock_owner)).
    type: float
    default: 900
notes:
  - C(changed) is true only when a POST was sent (in check mode, when one would be).
  - The task fails, sending nothing, when an id is missing (unless O(missing=ignore)), when an event does
    not list this VM (unless O(force=true)), or when O(expected_incarnation) does not match.
  - Stale events (see O(planned)) are skipped with a warning and never fail the task.
  - Returned ids are spelled as IMDS served them; an id not in the document keeps the spelling it was given.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
  - module: azure_imds.scheduled_events.scheduled_events_lock
"""

EXAMPLES = r"""
- name: Read the events
  azure_imds.scheduled_events.scheduled_events_info:
  register: scheduled

- name: Approve user-initiated reboots of this VM right away
  azure_imds.scheduled_events.scheduled_events_approve:
    events: "{{ scheduled.events_for_this_vm | selectattr('event_source', 'equalto', 'User') | list }}"
    expected_incarnation: "{{ scheduled.document_incarnation }}"
  when: scheduled.events_for_this_vm | selectattr('event_source', 'equalto', 'User') | list | length > 0

- name: Approve one event by id and wait until Azure has started it
  azure_imds.scheduled_events.scheduled_events_approve:
    event_ids:
      - 602D9444-D2CD-49C7-8624-8643E7171297
    wait_for_start: true

- name: Approve the reboots decided on after the read, skipping any whose type or Resources changed since
  azure_imds.scheduled_events.scheduled_events_approve:
    events: "{{ decided }}"
    planned: "{{ decided }}"
  vars:
    decided: "{{ scheduled.events_for_this_vm | selectattr('event_type', 'equalto', 'Reboot') | list }}"
"""

RETURN = r"""
approved:
  description: Ids sent in the POST (or that would be, in check mode).
  returned: always
  type: list
  elements: str
already_started:
  description: Ids already C(Started); not sent again.
  returned: always
  type: list
  elements: str
missing:
  description: Ids not in the current document.
  returned: always
  type: list
  elements: str
refused:
  description: Ids not approved because their C(Resources) do not list this VM and O(force) is false.
  returned: always
  type: list
  elements: str
stale:
  description:
    - Ids not approved because the event no longer matches its O(planned) item (C(EventType) or C(Resources)
      changed) or has none. A warning says what changed for each. Empty without O(planned).
  returned: always
  type: list
  elements: str
attempted:
  description:
    - Ids of a POST that failed (connection broken, retries exhausted); IMDS may or may not have received it.
  returned: when the approval request itself failed
  type: list
  elements: str
recorded_in:
  description: The state file in which the ids were recorded as approved before the POST (O(state_path)).
  returned: when O(state_path) is set and a POST was sent
  type: str
document_incarnation:
  description: C(DocumentIncarnation) of the document the decision was based on.
  returned: always
  type: int
started:
  description: With O(wait_for_start), ids seen C(Started) or gone after approval.
  returned: when O(wait_for_start=true)
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.approve import (
    MUTUALLY_EXCLUSIVE,
    REQUIRED_ONE_OF,
    argument_spec,
    run_approve,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import run_module


def main():
    module = AnsibleModule(argument_spec=argument_spec(), required_one_of=REQUIRED_ONE_OF,
                           mutually_exclusive=MUTUALLY_EXCLUSIVE, supports_check_mode=True)
    run_module(module, run_approve)


if __name__ == "__main__":
    main()
