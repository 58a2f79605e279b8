# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts whose transport is Azure's control plane: the module's task runs on the controller, the VM untouched.

A task given `control_plane` (the maintenance_cycle role gives it to hosts whose maintenance_cycle_transport is
control_plane) runs the same `run_*` function its module runs on a VM, for a ControlPlaneHost:
- its document and compute facts from the run's Resource Graph read (or, for an approval, a fresh read of this
  host's VM), its approval a Microsoft.Maintenance acknowledge on the event's scope (control_plane/host_read.py);
- its state and lock in the controller's state store (store/, `store`: files under `state_dir`/<inventory host>/
  by default, or a SQLite or PostgreSQL database that every controller and every AWX job names alike): the
  write-ahead record is where the run is, so a killed run or an unreachable VM still owes its recover, and a store
  that cannot be reached fails the task, so the host counts as busy (unread), never free.
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
    acknowledgements,
    check_host,
    document_for,
    ended_for,
    facts_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import load_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import (
    Host,
    HostError,
    StateUnreadable,
)
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
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    LOCK,
    STATE,
    Store,
    StoreError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import (
    FILE,
    StoreUrlError,
    open_store,
    parse_store_url,
)

OPTION = "control_plane"
DEFAULT_MAX_AGE_S = 60.0


def store_key(host: str, vm_path: str) -> Tuple[str, str]:
    """(kind, key) of a VM file (the state, its lock <state>.lock) of `host` in the store: <host>/<file name>."""
    name = os.path.basename(vm_path)
    return (LOCK if name.endswith(".lock") else STATE), "%s/%s" % (host, name)


def store_for(options: Dict[str, Any]) -> Store:
    """The store `options` name (`store`, a URL; `state_dir` for the default file store), or TaskFailed in one
    sentence (the host then counts as unread: busy)."""
    try:
        return open_store(str(options.get("store") or ""), str(options.get("state_dir") or ""))
    except (StoreUrlError, StoreError) as exc:
        raise TaskFailed(str(exc).rstrip(".") + ".")


def controller_path(state_dir: str, host: str, vm_path: str, store: Optional[Store] = None) -> str:
    """Where a VM file (the state, its lock) of `host` is kept: <state_dir>/<host>/<file name> in the default file
    store, else what `store` names (a database row)."""
    store = store or open_store("", state_dir)
    return store.where(*store_key(host, vm_path))


class ControlPlaneHost(Host):
    """One host, seen through the control plane from the controller. `state_path` (as controller_path names it),
    when the task has one, is what the read must vouch for (check_owed)."""

    transport = "control_plane"

    def __init__(self, host: str, options: Dict[str, Any], warn: Callable[[str], None],
                 state_path: Optional[str] = None, store: Optional[Store] = None):
        Host.__init__(self, warn)
        self.host, self.options, self.state_path = host, options, state_path
        self.store = store or store_for(options)
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
        state = None
        if self.state_path:
            try:
                text = self.read_state(self.state_path)
            except StateUnreadable:
                text = ""  # a damaged state: the claim counts the host busy
            state = load_state(text)[0]
        check_host(read, self.host, self.vm_id, now, float(self.options.get("max_age") or DEFAULT_MAX_AGE_S), state)
        self.ended = ended_for(read, self.host, now)
        return document_for(read, self.host, now)

    def read_state(self, path: str) -> Optional[str]:
        try:
            return self.store.read(*store_key(self.host, path))
        except StoreError as exc:
            raise TaskFailed("Cannot read %s's state in the controller's state store (%s); %s counts as busy "
                             "(unread)." % (self.host, str(exc).rstrip("."), self.host))

    def write_state(self, path: str, text: str) -> None:
        self.store.write(*store_key(self.host, path), text)

    def update_lock(self, path: str, change: Callable[[Optional[str]], Any], write: bool = True) -> Any:
        return self.store.update(*store_key(self.host, path), change, write=write)

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
    try:
        store = parse_store_url(str(options.get("store") or ""))
    except StoreUrlError as exc:
        raise TaskFailed(str(exc))
    if store.kind == FILE and not store.location and not options.get("state_dir"):
        raise TaskFailed("control_plane.state_dir must name the controller folder that keeps the state of hosts "
                         "read through the control plane (or control_plane.store a state store).")
    if not options.get("vm_id"):
        raise TaskFailed("%s has no VM ARM id (control_plane.vm_id; the maintenance_cycle role takes the azure_rm "
                         "inventory's `id`), so it cannot be read through the control plane and counts as busy."
                         % host)
    return options
