# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_lock's behaviour, whichever host it runs for (host/interface.py).

With scheduled_events_claim (the lock taken with the read a cycle plans from), the only tasks that write the
VM's lease lock: scheduled_events_info only reads, and scheduled_events_approve only POSTs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    CONTROL_PLANE_OPTION,
    TaskFailed,
    lock_step,
)

STEPS = {"held": "claim", "renewed": "refresh", "released": "release"}


def argument_spec():
    return dict(
        path=dict(type="path", required=True),
        owner=dict(type="str", required=True),
        state=dict(type="str", choices=sorted(STEPS), default="released"),
        lease_seconds=dict(type="float", default=900.0),
        **CONTROL_PLANE_OPTION
    )


def run_lock(params, host, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed."""
    if not params["path"]:
        raise TaskFailed("path must name the lock file on the VM, for example <state path>.lock.")
    lock = lock_step(STEPS[params["state"]], params["path"], params["owner"], params["lease_seconds"], host,
                     check_mode)
    changed = lock.pop("changed")
    return dict(changed=changed, lock=lock)
