# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts whose transport is Azure's control plane: the module's task runs on the controller, the VM untouched.

A task given `control_plane` (the maintenance_cycle role gives it to hosts whose maintenance_cycle_transport is
control_plane) runs the same `run_*` function its module runs on a VM, with edges that
- answer its IMDS requests from the control plane: the document and compute metadata from the run's Resource
  Graph read (or, for an approval, a fresh read of this host's VM), the approval as a Microsoft.Maintenance
  acknowledge on the event's scope (control_plane/imds_face.py);
- keep the VM's state and lock files on the controller, under `state_dir`/<inventory host>/: the write-ahead
  record is where the run is, so a killed run or an unreachable VM still owes its recover.
So the plan, its fail-closed rules, the write-ahead and the approval rules are the same code on both transports.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.acknowledge import (
    DEFAULT_API_VERSION,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.imds_face import (
    ControlPlaneBlind,
    acknowledgements,
    check_owed,
    check_present,
    check_read,
    compute_for,
    document_for,
    ended_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.cycle_state import load_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
    COMPUTE_PATH,
    SCHEDULED_EVENTS_PATH,
    ImdsError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import (
    read_text,
    update_under_guard,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane_task import (
    acknowledge_argument_spec,
    arm_client_for,
    read_control_plane,
    run_acknowledge,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    TaskEdges,
    TaskFailed,
    utc_now,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.state_file import write_state

OPTION = "control_plane"
DEFAULT_MAX_AGE_S = 60.0


def controller_path(state_dir: str, host: str, vm_path: str) -> str:
    """Where a VM file (the state, its lock) of `host` lives on the controller: <state_dir>/<host>/<file name>."""
    return os.path.join(os.path.expanduser(state_dir), host, os.path.basename(vm_path))


class ControlPlaneFace:
    """The IMDS requests of one task on one host, answered from the control plane."""

    def __init__(self, host: str, options: Dict[str, Any], warn: Callable[[str], None]):
        self.host, self.options, self.warn = host, options, warn
        self.vm_id = str(options.get("vm_id") or "")
        self.read: Optional[Dict[str, Any]] = options.get("read")
        self.ended: List[Dict[str, Any]] = []
        self.state_path: Optional[str] = None  # the host's state on the controller, when the task has one

    def send(self, method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        path = urlsplit(url).path.rstrip("/")
        try:
            if path == COMPUTE_PATH and method == "GET":
                return self._json(compute_for(self.host, self.vm_id, self.options.get("fault_domain"),
                                              self.options.get("zone")))
            if path == SCHEDULED_EVENTS_PATH and method == "GET":
                return self._json(self.document())
            if path == SCHEDULED_EVENTS_PATH and method == "POST":
                return self.acknowledge(json.loads(body or "{}"))
        except ControlPlaneBlind as exc:
            raise ImdsError(str(exc))
        raise ImdsError("%s %s has no control-plane answer." % (method, path))

    def document(self) -> Dict[str, Any]:
        read = self.read if self.read is not None else self.fresh_read()
        check_read(read, self.host, self.vm_id, utc_now(), float(self.options.get("max_age") or DEFAULT_MAX_AGE_S))
        check_present(read, self.host)
        if self.state_path:
            try:
                text = read_text(self.state_path)
            except OSError as exc:
                raise ControlPlaneBlind("Cannot read %s's state on the controller, %s (%s); %s counts as busy "
                                        "(unread)." % (self.host, self.state_path, exc, self.host))
            check_owed(read, self.host, load_state(text)[0])  # a corrupt state: the claim counts the host busy
        self.read = read
        self.ended = ended_for(read, self.host, utc_now())
        return document_for(read, self.host, utc_now())

    def fresh_read(self) -> Dict[str, Any]:
        """This host's VM alone, read now (an approval's second look, not the run's read)."""
        vm_ids = {self.host: self.vm_id}
        try:
            index = host_index(vm_ids)
            return read_control_plane(arm_client_for(self.params(), run_local), self.options.get("subscriptions"),
                                      vm_ids, index, self.warn)
        except (TaskFailed, ValueError) as exc:
            return {"failed": True, "msg": str(getattr(exc, "msg", exc)).rstrip(".")}

    def acknowledge(self, request: Dict[str, Any]) -> bytes:
        ids = [str(r.get("EventId")) for r in request.get("StartRequests", [])]
        if self.read is None:
            self.document()
        for scope, event_ids in sorted(acknowledgements(self.read, self.host, ids).items()):
            params = self.params(scope=scope, event_ids=event_ids,
                                 api_version=self.options.get("api_version") or DEFAULT_API_VERSION)
            try:
                result = run_acknowledge(params, TaskEdges(warn=self.warn, run_command=run_local), False, False)
            except TaskFailed as exc:
                raise ImdsError("Microsoft.Maintenance did not acknowledge %s: %s" % (", ".join(event_ids), exc.msg))
            if result["unknown"]:  # never counted approved: the caller says it may or may not have been
                raise ImdsError("Microsoft.Maintenance's answer does not say whether %s was acknowledged."
                                % ", ".join(result["unknown"]))
        return b""

    @staticmethod
    def params(**given: Any) -> Dict[str, Any]:
        """scheduled_events_acknowledge's options at their defaults (credentials from the environment or profile,
        as azure.azcollection reads them), updated with `given`."""
        params = dict((name, spec.get("default")) for name, spec in acknowledge_argument_spec().items())
        params.update(given)
        return params

    @staticmethod
    def _json(value: Dict[str, Any]) -> bytes:
        return json.dumps(value).encode("utf-8")


def run_local(args: List[str]) -> Tuple[int, str, str]:
    """A command on the controller (the Azure CLI), as AnsibleModule.run_command answers: (rc, stdout, stderr)."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, "", str(exc)
    return done.returncode, done.stdout, done.stderr


def control_plane_edges(face: ControlPlaneFace) -> TaskEdges:
    """TaskEdges for a control-plane host: its IMDS is `face`, its files are on the controller."""
    return TaskEdges(warn=face.warn, send=face.send, read_text=read_text, update_lock=update_under_guard,
                     write_text=write_state)


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
