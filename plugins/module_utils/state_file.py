# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VM side of the cycle's state file: one checked, atomic write (see cycle_state for its content)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import state_problem
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lock_file import read_text, replace_file
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.module_support import TaskFailed


def argument_spec():
    return dict(path=dict(type="path", required=True), content=dict(type="str", required=True))


def checked_content(content):
    """`content` if it is a valid state (cycle_state) in JSON; TaskFailed otherwise: never write what the next
    cycle could not trust."""
    try:
        problem = state_problem(json.loads(content))
    except ValueError as exc:
        problem = "is not JSON (%s)" % exc
    if problem:
        raise TaskFailed("the state to save %s, so nothing was written; pass the cycle_state filter's output." % problem)
    return content if content.endswith("\n") else content + "\n"


def write_state(path, text):
    """The directory (0700) if needed, then the file (0600) replaced atomically."""
    os.makedirs(os.path.dirname(path) or ".", 0o700, exist_ok=True)
    replace_file(path, text, prefix=".state-")


def run_save(params, edges, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. `changed` only when the file's content changes."""
    path = params["path"]
    text = checked_content(params["content"])
    try:
        before = read_text(path)
        changed = before != text
        if changed and not check_mode:
            write_state(path, text)
    except (OSError, IOError) as exc:
        raise TaskFailed("cannot save the state file %s (%s)." % (path, exc))
    result = dict(changed=changed, path=path)
    if diff_mode:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    return result
