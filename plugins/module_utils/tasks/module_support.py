# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What both modules share, wherever they run: options, the client, the task's edges.

A module task runs either as a Python module on the VM (Linux) or, for a
PowerShell host, in the action plugin on the controller with its HTTP going
through ansible.windows.win_uri. Both call the same `run_*` functions; only the
`TaskEdges` (how to warn, send and read a file) differ.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Tuple

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
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    DocumentError,
    compute_facts,
    parse_document,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsClient, ImdsError

IMDS_ARGUMENT_SPEC = dict(
    imds_url=dict(type="str", default="http://169.254.169.254"),
    api_version=dict(type="str", default="2020-07-01"),
    timeout=dict(type="float", default=5.0),
    first_call_timeout=dict(type="float", default=120.0),
    retries=dict(type="int", default=4),
    resource_name=dict(type="str"),
)

# Given by the maintenance_cycle role to hosts whose transport is the control plane: the action plugin then runs the
# task on the controller (plugin_utils/control_plane_host.py) and the module never sees it.
CONTROL_PLANE_OPTION = dict(control_plane=dict(type="dict"))

SUPPORTED_API_VERSIONS = ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01", "2019-04-01",
                          "2019-08-01", "2020-07-01")


class TaskFailed(Exception):
    """The task fails with one sentence; `result` carries what is known so far."""

    def __init__(self, msg, **result):
        super(TaskFailed, self).__init__(msg)
        self.msg = msg
        self.result = result


class StateUnreadable(Exception):
    """The state file exists but cannot be read; the message names the cause."""


@dataclass
class TaskEdges:
    """The I/O a task needs. `send` None means urllib from this machine; `read_text(path)` returns
    the file's text, None when it does not exist, or raises StateUnreadable."""

    warn: Callable[[str], None]
    send: Optional[Callable[[str, str, Optional[str], float], bytes]] = None
    read_text: Optional[Callable[[str], Optional[str]]] = None
    # update_lock(path, change, write=True): change(text or None) under an exclusive guard (lock_file.py),
    # only reading when write is false (check mode); None where the VM lock is not supported (Windows VMs)
    update_lock: Optional[Callable[..., Any]] = None
    # write_text(path, text): replace the file atomically (its folder created); None where a task writes nothing
    write_text: Optional[Callable[[str, str], None]] = None
    # run_command(args) -> (rc, stdout, stderr) on the machine the task runs on (AnsibleModule.run_command's);
    # the control-plane tasks run the Azure CLI with it
    run_command: Optional[Callable[[List[str]], Tuple[int, str, str]]] = None


def utc_now():
    return datetime.now(timezone.utc)


def build_client(params, send=None):
    # type: (Dict[str, Any], Any) -> ImdsClient
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


def read_document(client):
    """GET and parse the document; None for an empty body ("no document yet")."""
    return parse_document(client.get_document_body())


NO_COMPUTE = ("IMDS at %s has no compute metadata (HTTP 404 for /metadata/instance/compute: Microsoft's mock "
              "server, say), so this VM is matched by its resource_name %s and its fault domain is unknown (it holds "
              "every new fault domain of its set).")


def this_vm(client, resource_name, include_instance=True, warn=None):
    """(facts from compute metadata or None, the name to match Resources against).

    A service without compute metadata (404) is no failure when the name is given (resource_name): the VM's fault
    domain is then unknown, which the cycle counts as busy, and `warn` says so."""
    facts = None
    if include_instance:
        try:
            facts = compute_facts(client.get_compute())
        except ImdsError as exc:
            if exc.status != 404 or not resource_name:
                raise
            if warn is not None:
                warn(NO_COMPUTE % (client.base_url, resource_name))
    name = resource_name or (facts or {}).get("name")
    return facts, name


def guarded(func, *args, **kwargs):
    """Run an IMDS step; ImdsError and DocumentError become TaskFailed with their one sentence."""
    try:
        return func(*args, **kwargs)
    except (ImdsError, DocumentError) as exc:
        raise TaskFailed(str(exc))


NOT_SUPPORTED = "the VM lock is not supported on Windows VMs yet, so this run goes on without it on this host."


def lock_step(step, path, owner, lease_seconds, edges, check_mode=False):
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
    if edges.update_lock is None:
        edges.warn(NOT_SUPPORTED)
        return dict(result, taken=False, supported=False)
    now = utc_now()

    def change(text):
        if step == "claim":
            written, outcome = claim(text, owner, now, lease_seconds, path)
            result.update(taken=outcome["taken"] and not check_mode, held_by=outcome["held_by"],
                          changed=written is not None and not _owns(text, owner))
            if outcome["note"] and not outcome["held_by"] and not check_mode:
                edges.warn(outcome["note"])
        elif step == "refresh":
            written = refresh(text, owner, now, lease_seconds, path)
            result["taken"] = not check_mode
        else:
            written = release(text, owner)
            result.update(released=written is DELETE and not check_mode, taken=False, changed=written is DELETE)
        return None if check_mode else written

    try:
        edges.update_lock(path, change, write=not check_mode)
    except LockError as exc:
        raise TaskFailed(str(exc), lock=result)
    except (OSError, IOError) as exc:
        raise TaskFailed("cannot use the lock file %s (%s)." % (path, exc), lock=result)
    if result["held_by"]:
        result["message"] = held_message(result["held_by"], path)
    return result


def _owns(text, owner):
    holder = None if text is None else parse_lock(text)
    return holder is not None and holder["owner"] == owner


def run_module(module, run, edges_kwargs=None):
    """Run `run(params, edges, check_mode, diff_mode)` inside an AnsibleModule and exit with its result."""
    given = dict(run_command=module.run_command)
    given.update(edges_kwargs or {})
    edges = TaskEdges(warn=module.warn, **given)
    try:
        result = run(module.params, edges, module.check_mode, module._diff)
    except TaskFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)
