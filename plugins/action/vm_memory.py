# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vm_memory: runs on the control node; the meaning is in plugin_utils/vm_memory.py."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import update_under_guard
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.vm_memory import update

ARGUMENT_SPEC = dict(
    path=dict(type="str", required=True),
    seen=dict(type="dict", default={}),
    max_age_hours=dict(type="float", default=24.0),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if not args["path"].strip():  # memory off: every unread VM is unknown
            result.update(changed=False, path="", vms={})
            return result
        if args["max_age_hours"] <= 0:
            raise AnsibleActionFail("max_age_hours must be positive (how long a VM's fault domain is remembered).")
        path = os.path.abspath(os.path.expanduser(args["path"]))
        found = {}

        def change(text):
            written, found["vms"], found["note"] = update(text, args["seen"], datetime.now(timezone.utc),
                                                          args["max_age_hours"])
            return written

        try:
            update_under_guard(path, change, write=not self._task.check_mode)
        except OSError as exc:
            raise AnsibleActionFail("cannot use the VM memory file %s (%s); set it with maintenance_cycle_vm_memory, "
                                    "or '' for none." % (path, exc))
        if found.get("note"):
            self._display.warning("%s: %s" % (path, found["note"]))
        result.update(changed=False, path=path, vms=found["vms"])
        return result
