# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""controller_lock: runs on the control node, for the ansible-playbook process it serves."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import update_under_guard
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.controller_lock import (
    give_back,
    process,
    take,
)

ARGUMENT_SPEC = dict(
    path=dict(type="str", required=True),
    state=dict(type="str", choices=["held", "released"], default="held"),
    owner=dict(type="str", default=""),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if not args["path"].strip():
            raise AnsibleActionFail("path must not be empty.")
        path = os.path.abspath(os.path.expanduser(args["path"]))
        me = process(os.getppid())  # workers are forked from ansible-playbook: it is the holder
        playbook = str((task_vars or {}).get("ansible_play_name", ""))
        found = {}

        def change(text):
            if args["state"] == "released":
                found["answer"] = give_back(text, me)
                return found["answer"]
            written, refusal, note = take(text, me, args["owner"], playbook, path)
            found.update(refusal=refusal, note=note)
            return written

        try:
            update_under_guard(path, change)
        except OSError as exc:
            raise AnsibleActionFail("cannot use the control-node lock file %s (%s)." % (path, exc))
        if found.get("refusal"):
            raise AnsibleActionFail(found["refusal"])
        if found.get("note"):
            self._display.warning(found["note"])
        result.update(changed=False, path=path, pid=me.pid)
        if args["state"] == "released":
            result["released"] = found["answer"] is not None
        return result
