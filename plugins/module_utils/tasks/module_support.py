# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the VM modules share, wherever they run: options, the client, the lock step, the module's frame.

A module task runs as a Python module on a Linux VM, or in the action plugin on the controller for a Windows VM or
a host read through the control plane. Each calls the same `run_*(params, host, check_mode, diff_mode)`; only the
host (host/interface.py) differs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from datetime import datetime, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import (
    DELETE,
    LockError,
    check_lock_request,
    claim,
    held_message,
    parse_lock,
    refresh,
    release,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
    DEFAULT_API_VERSION,
    DEFAULT_URL,
    SUPPORTED_API_VERSIONS,
    ImdsClient,
    ImdsError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import HOST_ERRORS
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LinuxVm

IMDS_ARGUMENT_SPEC = dict(
    imds_url=dict(type="str", default=DEFAULT_URL),
    api_version=dict(type="str", default=DEFAULT_API_VERSION),
    timeout=dict(type="float", default=5.0),
    first_call_timeout=dict(type="float", default=120.0),
    retries=dict(type="int", default=4),
    resource_name=dict(type="str"),
)

# Given by the maintenance_cycle role to hosts whose transport is the control plane: the action plugin then runs the
# task on the controller (plugin_utils/control_plane_host.py) and the module never sees it.
CONTROL_PLANE_OPTION = dict(control_plane=dict(type="dict"))


class TaskFailed(Exception):
    """The task fails with one sentence; `result` carries what is known so far."""

    def __init__(self, msg, **result):
        super(TaskFailed, self).__init__(msg)
        self.msg = msg
        self.result = result


def utc_now():
    return datetime.now(timezone.utc)


def build_client(params, send=None):
    """An ImdsClient from the shared options; bad values raise TaskFailed in one sentence."""
    if params["timeout"] <= 0 or params["first_call_timeout"] <= 0:
        raise TaskFailed("timeout and first_call_timeout must be positive numbers of seconds.")
    if params["retries"] < 0:
        raise TaskFailed("retries must be 0 or more.")
    if params["api_version"] not in SUPPORTED_API_VERSIONS:
        raise TaskFailed("api_version %r is not a Scheduled Events api-version (known: %s)."
                         % (params["api_version"], ", ".join(SUPPORTED_API_VERSIONS)))
    try:
        return ImdsClient(base_url=params["imds_url"], api_version=params["api_version"],
                          timeout=params["timeout"], retries=params["retries"],
                          first_call_timeout=params["first_call_timeout"], send=send)
    except ImdsError as exc:
        raise TaskFailed(str(exc))


NO_COMPUTE = ("IMDS at %s has no compute metadata (HTTP 404 for /metadata/instance/compute: Microsoft's mock "
              "server, say), so this VM is matched by its resource_name %s and its fault domain is unknown (it holds "
              "every new fault domain of its set).")


def this_vm(host, resource_name, include_instance=True):
    """(facts from the host's compute metadata or None, the name to match Resources against).

    A service without compute metadata (404) is no failure when the name is given (resource_name): the VM's fault
    domain is then unknown, which the cycle counts as busy, and the host's warning says so."""
    facts = None
    if include_instance:
        try:
            facts = host.compute_facts()
        except ImdsError as exc:
            if exc.status != 404 or not resource_name:
                raise
            host.warn(NO_COMPUTE % (host.where, resource_name))
    name = resource_name or (facts or {}).get("name")
    return facts, name


def guarded(func, *args, **kwargs):
    """Run a step that asks the host; its errors (HOST_ERRORS) become TaskFailed with their one sentence."""
    try:
        return func(*args, **kwargs)
    except HOST_ERRORS as exc:
        raise TaskFailed(str(exc))


def lock_step(step, path, owner, lease_seconds, host, check_mode=False):
    """Claim, refresh or release this run's lease lock at `path` on the VM (see cycle_lock).

    The result says whether the lock is this run's (`taken`), which other run holds it (`held_by`), and whether
    the lock file was created, taken over or deleted (`changed`; renewing one's own lease is not a change). In
    check mode the lock is judged, and `changed` says what would happen, but nothing is written."""
    try:
        check_lock_request(owner, lease_seconds)
    except LockError as exc:
        raise TaskFailed(str(exc))
    # `taken` stays true if a release fails, so that a later release tries again.
    result = {"path": path, "owner": owner, "taken": step == "release", "held_by": None, "changed": False}
    if host.capabilities.no_lock:  # the sentence its kind declares once
        host.warn(host.capabilities.no_lock)
        return dict(result, taken=False, supported=False)
    now = utc_now()

    def change(text):
        if step == "claim":
            written, outcome = claim(text, owner, now, lease_seconds, path)
            result.update(taken=outcome["taken"] and not check_mode, held_by=outcome["held_by"],
                          changed=written is not None and not _owns(text, owner))
            if outcome["note"] and not outcome["held_by"] and not check_mode:
                host.warn(outcome["note"])
        elif step == "refresh":
            written = refresh(text, owner, now, lease_seconds, path)
            result["taken"] = not check_mode
        else:
            written = release(text, owner)
            result.update(released=written is DELETE and not check_mode, taken=False, changed=written is DELETE)
        return None if check_mode else written

    try:
        host.update_lock(path, change, write=not check_mode)
    except LockError as exc:
        raise TaskFailed(str(exc), lock=result)
    except (OSError, IOError) as exc:
        raise TaskFailed("cannot use the lock file %s (%s)." % (path, exc), lock=result)
    if result["held_by"]:
        result["message"] = held_message(result["held_by"], path)
    return result


def renews_lock(host, owner):
    """Whether a write renews `owner`'s lock in the same step: only when an owner is given and the host keeps a lock;
    a host that keeps none says why (its kind's sentence), and the write goes on without one."""
    if owner and host.capabilities.no_lock:
        host.warn(host.capabilities.no_lock)
        return False
    return bool(owner)


def _owns(text, owner):
    holder = None if text is None else parse_lock(text)
    return holder is not None and holder["owner"] == owner


def linux_vm(module):
    """The Linux VM a module runs on, its IMDS client from the module's options (a module without them, the lock's
    and the state's, asks IMDS nothing)."""
    return LinuxVm(build_client(module.params) if "imds_url" in module.params else None, module.warn)


def run_module(module, run, host_of=linux_vm):
    """Run `run(params, host_of(module), check_mode, diff_mode)` inside an AnsibleModule and exit with its result."""
    try:
        result = run(module.params, host_of(module), module.check_mode, module._diff)
    except TaskFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)
