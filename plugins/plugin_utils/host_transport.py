# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a VM module's task runs, by the host's transport; the same `run_*` function in every case.

- a POSIX host: the module, on the VM (Ansible's normal action);
- a PowerShell host: `RUN` on the controller, its IMDS requests through ansible.windows.win_uri on the VM
  (windows_host.py);
- a task given `control_plane`: `RUN` on the controller, its IMDS answered by Azure's control plane and its
  files kept on the controller (control_plane_host.py); the VM is not contacted.
Each result is labelled with its transport: the role saves a host's state by it, the history keeps it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ansible.errors import AnsibleActionFail
from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    TaskEdges,
    TaskFailed,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.control_plane_host import (
    OPTION,
    ControlPlaneFace,
    checked_options,
    control_plane_edges,
    controller_path,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.windows_host import (
    windows_edges,
    windows_path,
    call_module,
)


class HostTransportAction(NormalAction):
    """The module on the VM for POSIX shells; `RUN` on the controller for PowerShell hosts and control-plane ones."""

    RUN: Callable[..., Dict[str, Any]]
    ARGUMENT_SPEC: Callable[[], Dict[str, Any]]
    REQUIRED_ONE_OF: list = []
    MUTUALLY_EXCLUSIVE: list = []
    REQUIRED_TOGETHER: list = []
    PATH_OPTIONS: tuple = ()
    WINDOWS = True  # False: a module Windows VMs do not run (the role saves their state its own way)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if self._task.args.get(OPTION) is not None:
            return self.on_controller(tmp, task_vars, "control_plane")
        if not self.WINDOWS or self._connection._shell.SHELL_FAMILY != "powershell":
            return self.labelled(super().run(tmp, task_vars), "module")
        return self.on_controller(tmp, task_vars, "win_uri")

    def on_controller(self, tmp, task_vars: Dict[str, Any], transport: str) -> Dict[str, Any]:
        result = super(NormalAction, self).run(tmp, task_vars)  # ActionBase: check-mode bookkeeping only
        if self._task.async_val:
            raise AnsibleActionFail("async is not supported where this task runs on the controller (%s)." % transport)
        args = self.validated_args()
        warnings: List[str] = []
        face = None
        try:
            if transport == "control_plane":
                host = task_vars.get("inventory_hostname", "")
                options = checked_options(host, args.pop(OPTION) or {})
                for name in self.PATH_OPTIONS:
                    if args.get(name):
                        args[name] = controller_path(options["state_dir"], host, args[name])
                face = ControlPlaneFace(host, options, warnings.append)
                face.state_path = args.get("state_path")
                edges: TaskEdges = control_plane_edges(face)
            else:
                args.pop(OPTION, None)
                for name in self.PATH_OPTIONS:
                    if args.get(name):
                        args[name] = windows_path(args[name])
                edges = windows_edges(call_module(self, task_vars), warnings.append)
            result.update(type(self).RUN(args, edges, bool(self._task.check_mode), bool(self._task.diff)))
        except TaskFailed as exc:
            result.update(exc.result, failed=True, msg=exc.msg)
        if face is not None:
            result["transport"] = transport  # the history records where a read or an approval went
            if face.ended:
                result["control_plane_ended"] = face.ended  # Completed and Canceled, kept apart for the history
        if warnings:
            result["warnings"] = warnings
        result["invocation"] = {"module_args": args}
        return self.labelled(result, transport)

    def labelled(self, result: Dict[str, Any], transport: str) -> Dict[str, Any]:
        return result

    def validated_args(self) -> Dict[str, Any]:
        """The task's arguments validated by the module's own spec; paths stay VM paths (`path` would expand ~
        on the controller), moved by the caller."""
        spec = type(self).ARGUMENT_SPEC()
        for name in self.PATH_OPTIONS:
            spec[name] = dict(spec[name], type="str")
        _validation, args = self.validate_argument_spec(argument_spec=spec, required_one_of=self.REQUIRED_ONE_OF,
                                                        mutually_exclusive=self.MUTUALLY_EXCLUSIVE,
                                                        required_together=self.REQUIRED_TOGETHER)
        return args
