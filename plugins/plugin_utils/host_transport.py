# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a VM module's task runs, by the host's transport; the same `run_*` function for every kind of host.

- a POSIX host: the module, on the VM (Ansible's normal action), for a LinuxVm (host/linux_vm.py);
- a PowerShell host: `RUN` on the controller for a WindowsVm (windows_host.py);
- a task given `control_plane`: `RUN` on the controller for a ControlPlaneHost (control_plane_host.py); the VM is
  not contacted.
Each result is labelled with its host's transport: the plan and the history tell hosts apart by it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ansible.errors import AnsibleActionFail
from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import Host
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import TaskFailed
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.control_plane_host import (
    OPTION,
    ControlPlaneHost,
    checked_options,
    controller_path,
    store_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.windows_host import (
    WindowsVm,
    call_action,
    call_module,
    windows_path,
)


class HostTransportAction(NormalAction):
    """The module on the VM for POSIX shells; `RUN` on the controller for PowerShell hosts and control-plane ones."""

    RUN: Callable[..., Dict[str, Any]]
    ARGUMENT_SPEC: Callable[[], Dict[str, Any]]
    REQUIRED_ONE_OF: list = []
    MUTUALLY_EXCLUSIVE: list = []
    REQUIRED_TOGETHER: list = []
    PATH_OPTIONS: tuple = ()

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if self._task.args.get(OPTION) is not None:
            return self.on_controller(tmp, task_vars, ControlPlaneHost, self.control_plane_host)
        if self._connection._shell.SHELL_FAMILY != "powershell":
            return self.labelled(super().run(tmp, task_vars), "module")
        return self.on_controller(tmp, task_vars, WindowsVm, self.windows_vm)

    def on_controller(self, tmp, task_vars: Dict[str, Any], kind: type, host_of: Callable[..., Host]) -> Dict[str, Any]:
        """`RUN` for the host `host_of(args, task_vars, warn)` makes, a `kind` of host."""
        result = super(NormalAction, self).run(tmp, task_vars)  # ActionBase: check-mode bookkeeping only
        if self._task.async_val:
            raise AnsibleActionFail("async is not supported where this task runs on the controller (%s)."
                                    % kind.transport)
        args = self.validated_args()
        warnings: List[str] = []
        host = None
        try:
            host = host_of(args, task_vars, warnings.append)
            result.update(type(self).RUN(args, host, bool(self._task.check_mode), bool(self._task.diff)))
        except TaskFailed as exc:
            result.update(exc.result, failed=True, msg=exc.msg)
        if kind is ControlPlaneHost:
            result["transport"] = kind.transport  # the history records where a read or an approval went
            if host is not None and host.ended:
                result["control_plane_ended"] = host.ended  # Completed and Canceled, kept apart for the history
        if warnings:
            result["warnings"] = warnings
        result["invocation"] = {"module_args": args}
        return self.labelled(result, kind.transport)

    def control_plane_host(self, args: Dict[str, Any], task_vars: Dict[str, Any], warn) -> ControlPlaneHost:
        """The host seen through the control plane, its VM paths moved to the controller's state store."""
        name = task_vars.get("inventory_hostname", "")
        options = checked_options(name, args.pop(OPTION) or {})
        store = store_for(options)
        for option in self.PATH_OPTIONS:
            if args.get(option):
                args[option] = controller_path(options.get("state_dir", ""), name, args[option], store)
        return ControlPlaneHost(name, options, warn, args.get("state_path"), store)

    def windows_vm(self, args: Dict[str, Any], task_vars: Dict[str, Any], warn) -> WindowsVm:
        """The Windows VM, its paths as Windows spells them."""
        args.pop(OPTION, None)
        for option in self.PATH_OPTIONS:
            if args.get(option):
                args[option] = windows_path(args[option])
        return WindowsVm(args, call_module(self, task_vars), call_action(self, task_vars), warn)

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
