# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_claim's behaviour, whichever host it runs for (host/interface.py).

A maintenance cycle's read: this run's lease lock on the VM, then the read its plan comes from, in one
call, where it took two module calls (scheduled_events_lock, then scheduled_events_info), and a third
to give a quiet VM its lock back. On a big fleet every module call of every affected VM is controller
CPU; the lock and its read belong together anyway (no other run may change the state under the plan).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import (
    observe,
    read_argument_spec,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    CONTROL_PLANE_OPTION,
    TaskFailed,
    lock_step,
)


def argument_spec():
    spec = read_argument_spec()
    del spec["previous"]  # see run_claim
    spec.update(
        state_path=dict(type="path", required=True),
        owner=dict(type="str", required=True),
        lease_seconds=dict(type="float", default=900.0),
        **CONTROL_PLANE_OPTION
    )
    return spec


def lock_path(state_path):
    """The lock next to the state file (what scheduled_events_lock renews and releases)."""
    return state_path + ".lock"


def run_claim(params, host, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. Another run's live lock is not an error: the read
    still happens and `lock.held_by` names that run. A VM with nothing to do (quiet), or whose read failed,
    gets its lock back at once; otherwise the caller releases it when its cycle ends. In check mode the lock
    is judged, not taken; with lease_seconds 0 none is (`lock` is empty)."""
    if not params["state_path"]:
        raise TaskFailed("state_path must name the state file on the VM; the lock is <state_path>.lock.")
    read = dict(params, previous=None)  # the diff's base is the state the claimed VM keeps
    if params["lease_seconds"] == 0:  # locking off: a plain read, no lock in play
        return dict(observe(read, host), lock={})
    lock = lock_step("claim", lock_path(params["state_path"]), params["owner"], params["lease_seconds"], host,
                     check_mode)
    changed = lock.pop("changed")
    try:
        result = observe(read, host)
    except TaskFailed as exc:
        exc.result["lock"] = _give_back(lock, host)
        raise
    if result["quiet"]:
        lock, changed = _give_back(lock, host), False
    result.update(lock=lock, changed=changed)
    return result


def _give_back(lock, host):
    """Release the lock this call took; the lock as it was when it took none."""
    if not lock["taken"]:
        return lock
    released = lock_step("release", lock["path"], lock["owner"], 1.0, host)
    released.pop("changed")
    return released
