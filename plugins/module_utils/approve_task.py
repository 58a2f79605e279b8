# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_approve's behaviour, independent of where it runs (see module_support)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.approval import (
    ApprovalRequestError,
    plan_approval,
    planned_events,
    requested_ids,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.imds import ImdsError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.module_support import (
    IMDS_ARGUMENT_SPEC,
    TaskFailed,
    build_client,
    guarded,
    read_document,
    this_vm,
)

REQUIRED_ONE_OF = [("event_ids", "events")]
MUTUALLY_EXCLUSIVE = [("event_ids", "events")]


def argument_spec():
    spec = dict(IMDS_ARGUMENT_SPEC)
    spec.update(
        event_ids=dict(type="list", elements="str"),
        events=dict(type="list", elements="dict"),
        planned=dict(type="list", elements="dict"),
        missing=dict(type="str", choices=["fail", "ignore"], default="fail"),
        force=dict(type="bool", default=False),
        expected_incarnation=dict(type="int"),
        wait_for_start=dict(type="bool", default=False),
        wait_timeout=dict(type="float", default=120.0),
        poll_interval=dict(type="float", default=1.0),
    )
    return spec


def wait_until_started(client, ids, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """The ids (as given, in their order) seen Started or gone within the timeout, polling the document.

    Ids are matched case-insensitively: the answer keeps the caller's spelling."""
    deadline = clock() + timeout
    while True:
        parsed = read_document(client)
        status = dict((e["event_id"].upper(), e["event_status"]) for e in (parsed or {}).get("events", []))
        done = [i for i in ids if parsed is not None and status.get(i.upper(), "gone") != "Scheduled"]
        if len(done) == len(ids) or clock() + interval > deadline:
            return done
        sleep(interval)


def run_approve(params, edges, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. Sends nothing unless every rule allows it."""
    try:
        ids = requested_ids(params["event_ids"], params["events"])
        planned_events(params["planned"])  # a malformed plan fails here, before IMDS is asked anything
    except ApprovalRequestError as exc:
        raise TaskFailed(str(exc))
    client = build_client(params, edges.send)
    resource_name = params["resource_name"] or None  # "" (a role default) is no name: read it from IMDS
    _facts, name = guarded(this_vm, client, resource_name, resource_name is None)
    parsed = guarded(read_document, client)
    if parsed is None:
        raise TaskFailed("IMDS has no Scheduled Events document yet (empty body); nothing can be approved.")
    plan = plan_approval(parsed, ids, name, force=params["force"], expected_incarnation=params["expected_incarnation"],
                         missing=params["missing"], planned=params["planned"])
    for warning in plan.warnings:
        edges.warn(warning)
    result = dict(changed=bool(plan.approve), approved=plan.approve, already_started=plan.already_started,
                  missing=plan.missing, refused=plan.refused, stale=plan.stale,
                  document_incarnation=parsed["document_incarnation"])
    if diff_mode:
        result["diff"] = plan.diff(check_mode)
    if plan.error:
        result.update(changed=False, approved=[])
        raise TaskFailed(plan.error, **result)
    if plan.approve and not check_mode:
        try:
            client.approve(plan.approve)
        except ImdsError as exc:
            # The POST may have reached IMDS before the connection broke: say what was sent.
            result.update(changed=True, approved=[], attempted=plan.approve)
            raise TaskFailed("%s, so the approval of %s may or may not have reached IMDS; read the events again."
                             % (str(exc).rstrip("."), ", ".join(plan.approve)), **result)
        if params["wait_for_start"]:
            started = guarded(wait_until_started, client, plan.approve, params["wait_timeout"], params["poll_interval"])
            result["started"] = started
            late = [i for i in plan.approve if i not in started]
            if late:
                raise TaskFailed("approved, but %s did not start within %g s." % (", ".join(late), params["wait_timeout"]),
                                 **result)
    return result
