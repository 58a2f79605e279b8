# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""relay_code: builds the relay's archive on the control node and copies it; the meaning is in
plugin_utils/relay_code.py, the copying (check mode, diff, mode) is ansible.builtin.copy's own. The archive is built
again for each host, in its worker (about 40 ms)."""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.relay_code import (
    RelayCodeError,
    archive,
    closure,
)

ARGUMENT_SPEC = dict(
    dest=dict(type="str", required=True),  # a path on the VM: expanded there (~, $VAR), as copy does
    mode=dict(type="raw", default="0644"),
)
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")


def read_code(path: str) -> bytes:
    with open(os.path.join(MODULE_UTILS, path), "rb") as source:
        return source.read()


def build() -> tuple:
    """(the archive's bytes, the modules in it), or AnsibleActionFail in one sentence."""
    try:
        paths = closure(lambda path: read_code(path).decode("utf-8"),
                        lambda path: os.path.isfile(os.path.join(MODULE_UTILS, path)))
        return archive({path: read_code(path) for path in paths}), paths
    except (OSError, UnicodeDecodeError, SyntaxError, RelayCodeError) as exc:
        raise AnsibleActionFail("the relay's code cannot be archived on the control node (%s): reinstall the "
                                "collection." % (getattr(exc, "strerror", None) or exc))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # the copy it runs makes and removes its own temporary directory on the VM

    def run(self, tmp=None, task_vars=None):
        super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if not args["dest"].strip() or args["dest"].endswith("/"):
            raise AnsibleActionFail("dest must name the archive's file on the VM, not a directory: %r." % args["dest"])
        bundle, paths = build()
        try:
            local = tempfile.mkdtemp(dir=C.DEFAULT_LOCAL_TMP)
        except OSError as exc:
            raise AnsibleActionFail("the control node's local temporary directory %s is not writable (%s)."
                                    % (C.DEFAULT_LOCAL_TMP, exc.strerror or exc))
        try:
            source = os.path.join(local, "relay.zip")
            try:
                with open(source, "wb") as out:
                    out.write(bundle)
            except OSError as exc:
                raise AnsibleActionFail("cannot write the relay's archive on the control node in %s (%s)."
                                        % (local, exc.strerror or exc))
            task = self._task.copy()
            task.args = dict(src=source, dest=args["dest"], mode=args["mode"])
            copy = self._shared_loader_obj.action_loader.get(
                "ansible.legacy.copy", task=task, connection=self._connection, play_context=self._play_context,
                loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
            result = copy.run(task_vars=task_vars)
        finally:
            shutil.rmtree(local, ignore_errors=True)
        if not result.get("failed"):
            result["modules"] = [path[:-3].replace("/", ".") for path in paths]
        return result
