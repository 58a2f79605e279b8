# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_approve's behaviour, whichever host it approves on (host/interface.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import LockError, refresh
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    empty_state,
    load_state,
    state_text,
    with_approved,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import (
    ApprovalRequestError,
    plan_approval,
    planned_events,
    requested_ids,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import HOST_ERRORS, StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    CONTROL_PLANE_OPTION,
    IMDS_ARGUMENT_SPEC,
    TaskFailed,
    guarded,
    renews_lock,
    this_vm,
    utc_now,
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
        state_path=dict(type="path"),
        lock_owner=dict(type="str"),
        lease_seconds=dict(type="float", default=900.0),
        **CONTROL_PLANE_OPTION
    )
    return spec


def record_approval(params, ids, host):
    """Write-ahead: `ids` on record as approved in the host's state before the approval sends them, in the step
    that renews this run's lock where the host keeps one (a run taken over records, and so sends, nothing).
    Raises TaskFailed."""
    path, owner = params["state_path"], params["lock_owner"]

    def recorded():
        state, status, message = load_state(host.read_state(path))
        if status == "corrupt":
            raise TaskFailed("%s: %s Nothing was approved." % (path, message))
        return state_text(with_approved(state or empty_state(), ids))

    try:
        if not renews_lock(host, owner):
            host.write_state(path, recorded())
            return

        def change(current):
            renewed = refresh(current, owner, utc_now(), params["lease_seconds"], path + ".lock")
            host.write_state(path, recorded())
            return renewed

        host.update_lock(path + ".lock", change)
    except LockError as exc:
        raise TaskFailed("%s Nothing was approved." % str(exc).rstrip("."))
    except (OSError, IOError, StateUnreadable) as exc:
        raise TaskFailed("cannot record the approval in the state file %s (%s), so nothing was approved." % (path, exc))


def wait_until_started(host, ids, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """The ids (as given, in their order) seen Started or gone within the timeout, polling the document.

    Ids are matched case-insensitively: the answer keeps the caller's spelling."""
    deadline = clock() + timeout
    while True:
        parsed = host.document()
        status = dict((e["event_id"].upper(), e["event_status"]) for e in (parsed or {}).get("events", []))
        done = [i for i in ids if parsed is not None and status.get(i.upper(), "gone") != "Scheduled"]
        if len(done) == len(ids) or clock() + interval > deadline:
            return done
        sleep(interval)


def run_approve(params, host, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. Sends nothing unless every rule allows it."""
    try:
        ids = requested_ids(params["event_ids"], params["events"])
        planned_events(params["planned"])  # a malformed plan fails here, before IMDS is asked anything
    except ApprovalRequestError as exc:
        raise TaskFailed(str(exc))
    resource_name = params["resource_name"] or None  # "" (a role default) is no name: read it from IMDS
    _facts, name = guarded(this_vm, host, resource_name, resource_name is None)
    parsed = guarded(host.document)
    if parsed is None:
        raise TaskFailed("IMDS has no Scheduled Events document yet (empty body); nothing can be approved.")
    plan = plan_approval(parsed, ids, name, force=params["force"], expected_incarnation=params["expected_incarnation"],
                         missing=params["missing"], planned=params["planned"])
    for warning in plan.warnings:
        host.warn(warning)
    result = dict(changed=bool(plan.approve), approved=plan.approve, already_started=plan.already_started,
                  missing=plan.missing, refused=plan.refused, stale=plan.stale,
                  document_incarnation=parsed["document_incarnation"])
    if diff_mode:
        result["diff"] = plan.diff(check_mode)
    if plan.error:
        result.update(changed=False, approved=[])
        raise TaskFailed(plan.error, **result)
    if plan.approve and not check_mode:
        if params["state_path"]:
            record_approval(params, plan.approve, host)
            result["recorded_in"] = params["state_path"]
        try:
            host.approve(plan.approve)
        except HOST_ERRORS as exc:
            # The POST may have reached IMDS before the connection broke: say what was sent.
            result.update(changed=True, approved=[], attempted=plan.approve)
            raise TaskFailed("%s, so the approval of %s may or may not have reached IMDS; read the events again."
                             % (str(exc).rstrip("."), ", ".join(plan.approve)), **result)
        if params["wait_for_start"]:
            started = guarded(wait_until_started, host, plan.approve, params["wait_timeout"], params["poll_interval"])
            result["started"] = started
            late = [i for i in plan.approve if i not in started]
            if late:
                raise TaskFailed("approved, but %s did not start within %g s." % (", ".join(late), params["wait_timeout"]),
                                 **result)
    return result
