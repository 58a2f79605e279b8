# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cycle's state saved on its host (host/interface.py): one checked, atomic write (see cycle/state.py for its content),
under this run's lease lock when the run holds one: the lock is renewed (or released) in the same step, so a run
whose lease ran out and was taken over saves nothing, and a cycle needs no separate module call for either."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import (
    LockError,
    check_lock_request,
    refresh,
    release,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import owes_work
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import state_problem
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    CONTROL_PLANE_OPTION,
    TaskFailed,
    renews_lock,
    utc_now,
)


def argument_spec():
    return dict(
        path=dict(type="path", required=True),
        content=dict(type="str", required=True),
        lock_owner=dict(type="str"),
        lease_seconds=dict(type="float", default=900.0),
        release_lock=dict(type="bool", default=False),
        **CONTROL_PLANE_OPTION
    )


def checked_content(content):
    """`content` if it is a valid state (cycle/state.py) in JSON; TaskFailed otherwise: never write what the next
    cycle could not trust."""
    try:
        problem = state_problem(json.loads(content))
    except ValueError as exc:
        problem = "is not JSON (%s)" % exc
    if problem:
        raise TaskFailed("the state to save %s, so nothing was written; pass the cycle_state filter's output." % problem)
    return content if content.endswith("\n") else content + "\n"


def run_save(params, host, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. `changed` only when the file's content changes."""
    text = checked_content(params["content"])
    if params["release_lock"] and not params["lock_owner"]:
        raise TaskFailed("release_lock needs lock_owner, the run whose lock <path>.lock is released.")
    if not renews_lock(host, params["lock_owner"]):
        return saved(host, params["path"], text, check_mode, diff_mode)
    return saved_under_lock(params, text, host, check_mode, diff_mode)


def saved(host, path, text, check_mode, diff_mode):
    try:
        before = _before(host, path)
        changed = before != text
        if changed and not check_mode:
            host.write_state(path, text)
    except (OSError, IOError) as exc:
        raise TaskFailed("cannot save the state file %s (%s)." % (path, exc))
    result = dict(changed=changed, path=path)
    if not check_mode:  # what the host's state owes now (the event source's done report reads it)
        result["owes_work"] = owes_work(json.loads(text), "loaded")
    if diff_mode:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    return result


def _before(host, path):
    """The state as it is, None when there is none; one that cannot be read is replaced (the plan saves over it only
    when it owes nothing it could read)."""
    try:
        return host.read_state(path)
    except StateUnreadable:
        return None


def saved_under_lock(params, text, host, check_mode, diff_mode):
    """Renew this run's lock <path>.lock, save, then release the lock if asked: one step under the lock's guard.
    A lock gone or taken over fails the task before anything is written."""
    owner, lease, path = params["lock_owner"], params["lease_seconds"], params["path"]
    try:
        check_lock_request(owner, lease)
    except LockError as exc:
        raise TaskFailed(str(exc))
    lock_path = path + ".lock"
    result = {}

    def change(current):
        renewed = refresh(current, owner, utc_now(), lease, lock_path)
        result.update(saved(host, path, text, check_mode, diff_mode))
        return release(current, owner) if params["release_lock"] else renewed

    try:
        host.update_lock(lock_path, change, write=not check_mode)
    except LockError as exc:
        raise TaskFailed(str(exc), lock=dict(path=lock_path, owner=owner, taken=False))
    except (OSError, IOError) as exc:
        raise TaskFailed("cannot use the lock file %s (%s)." % (lock_path, exc))
    released = params["release_lock"] and not check_mode
    result["lock"] = dict(path=lock_path, owner=owner, taken=not released and not check_mode, released=released)
    return result
