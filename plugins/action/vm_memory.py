# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vm_memory: runs on the control node; the meaning is in plugin_utils/vm_memory.py."""

from __future__ import annotations

from datetime import datetime, timezone

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.split_sets import refusal
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import MEMORY, StoreError
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import (
    StoreUrlError,
    open_store,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.vm_memory import update

ARGUMENT_SPEC = dict(
    path=dict(type="str", required=True),
    seen=dict(type="dict", default={}),
    max_age_hours=dict(type="float", default=24.0),
    outside=dict(type="dict", default={}),
    refuse_split_sets=dict(type="bool", default=True),
    store=dict(type="str", default="file:"),
    target=dict(type="str", default="azure_vms"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if not args["path"].strip():  # memory off: every unread VM is unknown
            self._warn_split(args["outside"] if args["refuse_split_sets"] else {})
            result.update(changed=False, path="", vms={}, outside={}, deleting={})
            return result
        if args["max_age_hours"] <= 0:
            raise AnsibleActionFail("max_age_hours must be positive (how long a VM's fault domain is remembered).")
        found = {}
        try:
            store = open_store(args["store"], memory_path=lambda target: args["path"])
        except (StoreUrlError, StoreError) as exc:
            raise AnsibleActionFail(str(exc).rstrip(".") + ".")
        path = store.where(MEMORY, args["target"])

        def change(text):
            found["memory"] = update(text, args["seen"], datetime.now(timezone.utc), args["max_age_hours"],
                                     args["outside"])
            return found["memory"].text

        try:
            store.update(MEMORY, args["target"], change, write=not self._task.check_mode)
        except OSError as exc:  # StoreError too: the run stops before its plan, which would miss what it forgot
            raise AnsibleActionFail("cannot use the VM memory %s (%s); set maintenance_cycle_state_store (or "
                                    "maintenance_cycle_vm_memory, '' for none)." % (path, str(exc).rstrip(".")))
        memory = found["memory"]
        if memory.note:
            self._display.warning("%s: %s" % (path, memory.note))
        self._warn_split(memory.outside if args["refuse_split_sets"] else {})
        result.update(changed=False, path=path, vms=memory.vms, outside=memory.outside, deleting=memory.deleting)
        return result

    def _warn_split(self, outside):
        """Loud on every run, quiet hosts or not: the plan refuses these sets (cycle/split_sets.py)."""
        for set_name, names in sorted(outside.items()):
            self._display.warning(refusal(set_name, names))
