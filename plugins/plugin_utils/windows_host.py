# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Windows VMs: a module's task on the controller, for a WindowsVm host that reaches the VM through ansible.windows.

Python modules cannot run on Windows, and IMDS answers only from inside the VM. So for a PowerShell connection the
action plugin runs the same `run_*` function the Linux module runs, for a host whose IMDS requests are win_uri
calls on the VM, whose state is read with slurp and written with win_file and win_copy, and which keeps no lock
(said once, in its capabilities). Parsing, retries, the diff, the approval rules and the approval's write-ahead
record are therefore the same code on both platforms.
"""

from __future__ import annotations

import base64
import binascii
import math
import ntpath
from typing import Any, Callable, Dict, Optional

from ansible.errors import AnsibleError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
    ImdsError,
    checked_size,
    status_error,
    timeout_error,
    unreachable_error,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import Capabilities, StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.vm import ImdsHost
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    TaskFailed,
    build_client,
)

WIN_URI = "ansible.windows.win_uri"
SLURP = "ansible.windows.slurp"
WIN_FILE = "ansible.windows.win_file"
WIN_COPY = "ansible.windows.win_copy"  # an action plugin: it carries `content` to the VM
# win_uri fails on any status outside this list; we want every answer back and judge it ourselves.
EVERY_STATUS = list(range(100, 600))
SEND_FAILURE = "Unhandled exception occurred when sending web request"
MISSING_COLLECTION = ("Windows hosts need the ansible.windows collection on the controller "
                      "(ansible-galaxy collection install ansible.windows): %s")

ModuleCall = Callable[[str, Dict[str, Any]], Dict[str, Any]]


def windows_path(path: str) -> str:
    """A path as win_uri/slurp/win_copy expect it: a leading ~ is the user's profile."""
    if path == "~" or path.startswith(("~/", "~\\")):
        path = "%USERPROFILE%" + path[1:]
    return path.replace("/", "\\")


def win_uri_args(method: str, url: str, body: Optional[str], timeout: float) -> Dict[str, Any]:
    """win_uri options for one IMDS request: the same rules as the urllib client."""
    args: Dict[str, Any] = dict(url=url, method=method, headers={"Metadata": "true"}, use_proxy=False,
                                follow_redirects="none", url_timeout=max(1, int(math.ceil(timeout))),
                                return_content=True, status_code=EVERY_STATUS)
    if body is not None:
        args.update(body=body, content_type="application/json")
    return args


def answer_of(method: str, url: str, timeout: float, result: Dict[str, Any]) -> bytes:
    """The body of a win_uri result, or the ImdsError the urllib client would raise for it."""
    if result.get("failed") or "status_code" not in result:
        message = str(result.get("msg") or "no message").strip()
        if message.startswith(SEND_FAILURE):
            cause = message.split("Exception:", 1)[-1].strip().rstrip(".")
            if "timed out" in cause.lower():
                raise timeout_error(method, url, timeout)
            raise unreachable_error(url, cause)
        raise ImdsError("%s failed on the VM for %s %s: %s" % (WIN_URI, method, url, message.rstrip(".") + "."))
    status = int(result["status_code"])
    content = (result.get("content") or "").encode("utf-8")
    if 200 <= status < 300:
        return checked_size(url, content)
    raise status_error(method, url, status, content, result.get("status_description"), result.get("location"))


def state_text_of(path: str, result: Dict[str, Any]) -> Optional[str]:
    """The text of a slurp result; None when the file does not exist."""
    if result.get("failed"):
        message = str(result.get("msg") or "slurp failed")
        if message.endswith("is not found"):
            return None
        raise StateUnreadable(message)
    try:
        return base64.b64decode(result.get("content") or "", validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise StateUnreadable("slurp returned content that is not UTF-8 text in base64 (%s)" % exc)


class WindowsVm(ImdsHost):
    """A Windows VM, reached from the controller: `call(module, args)` runs a module on it, `run_action(action, args)`
    an action plugin for it."""

    transport = "win_uri"
    capabilities = Capabilities(no_lock="the VM lock is not supported on Windows VMs yet, so this run goes on without "
                                        "it on this host.")

    def __init__(self, params: Dict[str, Any], call: ModuleCall, run_action: ModuleCall, warn: Callable[[str], None]):
        def send(method: str, url: str, body: Optional[str], timeout: float) -> bytes:
            return answer_of(method, url, timeout, call(WIN_URI, win_uri_args(method, url, body, timeout)))

        ImdsHost.__init__(self, build_client(params, send) if "imds_url" in params else None, warn)
        self.call, self.run_action = call, run_action

    def read_state(self, path: str) -> Optional[str]:
        return state_text_of(path, self.call(SLURP, {"src": path}))

    def write_state(self, path: str, text: str) -> None:
        """Its folder, then the file (win_copy replaces it whole); the files inherit the ACL of the user's profile,
        which only that user and administrators can read."""
        done = self.call(WIN_FILE, {"path": ntpath.dirname(path), "state": "directory"})
        if not done.get("failed"):
            done = self.run_action(WIN_COPY, {"content": text, "dest": path})
        if done.get("failed"):
            raise OSError("ansible.windows could not write %s on the VM: %s" % (path, done.get("msg") or "no message"))


def call_module(action: Any, task_vars: Dict[str, Any]) -> ModuleCall:
    """`call(module, args)`: run a module on the action's host (the VM), one sentence when its collection is missing."""
    def call(name: str, module_args: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return action._execute_module(module_name=name, module_args=module_args, task_vars=task_vars)
        except AnsibleError as exc:
            if "was not found" in str(exc) or "could not be resolved" in str(exc):
                raise TaskFailed(MISSING_COLLECTION % exc)
            raise
    return call


def call_action(action: Any, task_vars: Dict[str, Any]) -> ModuleCall:
    """`run(action plugin, args)`: another action plugin run for the action's host, as its own task would."""
    def run(name: str, args: Dict[str, Any]) -> Dict[str, Any]:
        task = action._task.copy()
        task.args = args
        plugin = action._shared_loader_obj.action_loader.get(
            name, task=task, connection=action._connection, play_context=action._play_context, loader=action._loader,
            templar=action._templar, shared_loader_obj=action._shared_loader_obj)
        if plugin is None:
            raise TaskFailed(MISSING_COLLECTION % ("the action %s was not found" % name))
        return plugin.run(task_vars=task_vars)
    return run
