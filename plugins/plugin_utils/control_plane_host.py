# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts whose transport is Azure's control plane: the module's task runs on the controller, the VM untouched.

A task given `control_plane` (the maintenance_cycle role gives it to hosts whose maintenance_cycle_transport is
control_plane) runs the same `run_*` function its module runs on a VM, for a ControlPlaneHost:
- its document and compute facts from the run's Resource Graph read (or, for an approval, a fresh read of this
  host's VM), its approval a Microsoft.Maintenance acknowledge on the event's scope (control_plane/host_read.py);
- its state and lock files on the controller, under `state_dir`/<inventory host>/: the write-ahead record is
  where the run is, so a killed run or an unreachable VM still owes its recover. Behind this adapter, so that a
  later change can keep them in a store of their own.
So the plan, its fail-closed rules, the write-ahead and the approval rules are the same code on every host.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.acknowledge import (
    DEFAULT_API_VERSION,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_read import (
    ControlPlaneBlind,
    acknowledgements,
    check_owed,
    check_present,
    check_read,
    document_for,
    ended_for,
    facts_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import load_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import Host, HostError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LocalFiles
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import read_text
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    AzureEdges,
    acknowledge_argument_spec,
    arm_client_for,
    read_control_plane,
    run_acknowledge,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    TaskFailed,
    utc_now,
)

OPTION = "control_plane"
DEFAULT_MAX_AGE_S = 60.0


def controller_path(state_dir: str, host: str, vm_path: str) -> str:
    """Where a VM file (the state, its lock) of `host` lives on the controller: <state_dir>/<host>/<file name>."""
    return os.path.join(os.path.expanduser(state_dir), host, os.path.basename(vm_path))


class ControlPlaneHost(LocalFiles, Host):
    """One host, seen through the control plane from the controller. `state_path` (on the controller), when the task
    has one, is what the read must vouch for (check_owed)."""

    transport = "control_plane"

    def __init__(self, host: str, options: Dict[str, Any], warn: Callable[[str], None],
                 state_path: Optional[str] = None):
        Host.__init__(self, warn)
        self.host, self.options, self.state_path = host, options, state_path
        self.vm_id = str(options.get("vm_id") or "")
        self.given: Optional[Dict[str, Any]] = options.get("read")
        self.ended: List[Dict[str, Any]] = []  # Completed and Canceled, kept apart for the history

    def read(self) -> Dict[str, Any]:
        """The read this host is seen through: the run's, else (an approval's second look) this VM's alone, now."""
        if self.given is None:
            self.given = self.fresh_read()
        return self.given

    def compute_facts(self) -> Dict[str, Any]:
        return facts_for(self.host, self.vm_id, self.options.get("fault_domain"), self.options.get("zone"))

    def document(self) -> Dict[str, Any]:
        read, now = self.read(), utc_now()
        check_read(read, self.host, self.vm_id, now, float(self.options.get("max_age") or DEFAULT_MAX_AGE_S))
        check_present(read, self.host)
        if self.state_path:
            try:
                text = read_text(self.state_path)
            except OSError as exc:
                raise ControlPlaneBlind("Cannot read %s's state on the controller, %s (%s); %s counts as busy "
                                        "(unread)." % (self.host, self.state_path, exc, self.host))
            check_owed(read, self.host, load_state(text)[0])  # a corrupt state: the claim counts the host busy
        self.ended = ended_for(read, self.host, now)
        return document_for(read, self.host, now)

    def approve(self, event_ids: List[str]) -> None:
        """Acknowledge `event_ids`, per scope, from the read this host's document came from."""
        for scope, ids in sorted(acknowledgements(self.read(), self.host, event_ids).items()):
            params = self.params(scope=scope, event_ids=ids,
                                 api_version=self.options.get("api_version") or DEFAULT_API_VERSION)
            try:
                result = run_acknowledge(params, AzureEdges(warn=self.warn, run_command=run_local), False, False)
            except TaskFailed as exc:
                raise HostError("Microsoft.Maintenance did not acknowledge %s: %s" % (", ".join(ids), exc.msg))
            if result["unknown"]:  # never counted approved: the caller says it may or may not have been
                raise HostError("Microsoft.Maintenance's answer does not say whether %s was acknowledged."
                                % ", ".join(result["unknown"]))

    def fresh_read(self) -> Dict[str, Any]:
        vm_ids = {self.host: self.vm_id}
        try:
            return read_control_plane(arm_client_for(self.params(), run_local), self.options.get("subscriptions"),
                                      vm_ids, host_index(vm_ids), self.warn)
        except (TaskFailed, ValueError) as exc:
            return {"failed": True, "msg": str(getattr(exc, "msg", exc)).rstrip(".")}

    @staticmethod
    def params(**given: Any) -> Dict[str, Any]:
        """scheduled_events_acknowledge's options at their defaults (credentials from the environment or profile,
        as azure.azcollection reads them), updated with `given`."""
        params = dict((name, spec.get("default")) for name, spec in acknowledge_argument_spec().items())
        params.update(given)
        return params


def run_local(args: List[str]) -> Tuple[int, str, str]:
    """A command on the controller (the Azure CLI), as AnsibleModule.run_command answers: (rc, stdout, stderr)."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def checked_options(host: str, options: Dict[str, Any]) -> Dict[str, Any]:
    """`control_plane` as given, or TaskFailed in one sentence (the host then counts as unread: busy)."""
    if not options.get("state_dir"):
        raise TaskFailed("control_plane.state_dir must name the controller folder that keeps the state of hosts "
                         "read through the control plane.")
    if not options.get("vm_id"):
        raise TaskFailed("%s has no VM ARM id (control_plane.vm_id; the maintenance_cycle role takes the azure_rm "
                         "inventory's `id`), so it cannot be read through the control plane and counts as busy."
                         % host)
    return options
