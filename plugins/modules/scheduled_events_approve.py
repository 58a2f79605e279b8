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
      - Ids of the events to approve (C(EventId), case-insensitive).
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
notes:
  - C(changed) is true only when a POST was sent (in check mode, when one would be).
  - The task fails, sending nothing, when an id is missing (unless O(missing=ignore)), when an event does
    not list this VM (unless O(force=true)), or when O(expected_incarnation) does not match.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_info
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
attempted:
  description:
    - Ids of a POST that failed (connection broken, retries exhausted); IMDS may or may not have received it.
  returned: when the approval request itself failed
  type: list
  elements: str
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

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.approval import (
    ApprovalRequestError,
    plan_approval,
    requested_ids,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.imds import ImdsError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.module_support import (
    IMDS_ARGUMENT_SPEC,
    client_from_params,
    fail_on_errors,
    read_document,
    this_vm,
)


def argument_spec():
    spec = dict(IMDS_ARGUMENT_SPEC)
    spec.update(
        event_ids=dict(type="list", elements="str"),
        events=dict(type="list", elements="dict"),
        missing=dict(type="str", choices=["fail", "ignore"], default="fail"),
        force=dict(type="bool", default=False),
        expected_incarnation=dict(type="int"),
        wait_for_start=dict(type="bool", default=False),
        wait_timeout=dict(type="float", default=120.0),
        poll_interval=dict(type="float", default=1.0),
    )
    return spec


def wait_until_started(client, ids, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """Ids Started or gone within the timeout (a set), polling the document."""
    deadline = clock() + timeout
    wanted = set(i.upper() for i in ids)
    while True:
        parsed = read_document(client)
        status = dict((e["event_id"].upper(), e["event_status"]) for e in (parsed or {}).get("events", []))
        done = set(i for i in wanted if parsed is not None and status.get(i, "gone") != "Scheduled")
        if done == wanted or clock() + interval > deadline:
            return done
        sleep(interval)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_one_of=[("event_ids", "events")],
        mutually_exclusive=[("event_ids", "events")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        ids = requested_ids(params["event_ids"], params["events"])
    except ApprovalRequestError as exc:
        module.fail_json(msg=str(exc))
    client = client_from_params(module)
    _facts, name = fail_on_errors(module, this_vm, client, params["resource_name"], params["resource_name"] is None)
    parsed = fail_on_errors(module, read_document, client)
    if parsed is None:
        module.fail_json(msg="IMDS has no Scheduled Events document yet (empty body); nothing can be approved.")
    plan = plan_approval(parsed, ids, name, force=params["force"], expected_incarnation=params["expected_incarnation"],
                         missing=params["missing"])
    result = dict(changed=bool(plan.approve), approved=plan.approve, already_started=plan.already_started,
                  missing=plan.missing, refused=plan.refused, document_incarnation=parsed["document_incarnation"])
    if module._diff:
        result["diff"] = plan.diff(module.check_mode)
    if plan.error:
        result.update(changed=False, approved=[])
        module.fail_json(msg=plan.error, **result)
    if plan.approve and not module.check_mode:
        try:
            client.approve(plan.approve)
        except ImdsError as exc:
            # The POST may have reached IMDS before the connection broke: say what was sent.
            result.update(changed=True, approved=[], attempted=plan.approve)
            module.fail_json(msg="%s, so the approval of %s may or may not have reached IMDS; read the events again."
                             % (str(exc).rstrip("."), ", ".join(plan.approve)), **result)
        if params["wait_for_start"]:
            started = fail_on_errors(module, wait_until_started, client, plan.approve,
                                     params["wait_timeout"], params["poll_interval"])
            result["started"] = sorted(started)
            late = sorted(set(i.upper() for i in plan.approve) - started)
            if late:
                module.fail_json(msg="approved, but %s did not start within %g s." % (", ".join(late), params["wait_timeout"]),
                                 **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
