# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Windows VMs: a module's task on the controller, reaching IMDS through ansible.windows.win_uri (the edges).

Python modules cannot run on Windows, and IMDS answers only from inside the VM.
So for a PowerShell connection the action plugin runs the same `run_*` function
the Linux module runs, with edges that make each HTTP request a win_uri call on
the VM and read the state file with slurp. Parsing, retries, the diff and the
approval rules are therefore the same code on both platforms.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any, Callable, Dict, Optional

from ansible.errors import AnsibleError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
    ImdsError,
    checked_size,
    status_error,
    timeout_error,
    unreachable_error,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    StateUnreadable,
    TaskEdges,
    TaskFailed,
)

WIN_URI = "ansible.windows.win_uri"
SLURP = "ansible.windows.slurp"
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


def windows_edges(call: ModuleCall, warn: Callable[[str], None]) -> TaskEdges:
    """TaskEdges whose HTTP and file reads run on the VM through `call(module, args)`."""

    def send(method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        return answer_of(method, url, timeout, call(WIN_URI, win_uri_args(method, url, body, timeout)))

    def read_text(path: str) -> Optional[str]:
        return state_text_of(path, call(SLURP, {"src": path}))

    return TaskEdges(warn=warn, send=send, read_text=read_text)


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
