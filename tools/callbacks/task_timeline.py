# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""task_timeline: a development callback (tools/profile_cycle.py), not part of the collection. One JSON line per task
start and per host result, with the monotonic clock, to TASK_TIMELINE_PATH."""
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_timeline
type: aggregate
short_description: Per-task, per-host timings for tools/profile_cycle.py
description: [One JSON line per task start and per host result, to the file TASK_TIMELINE_PATH names.]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_timeline"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._out = open(os.environ["TASK_TIMELINE_PATH"], "a", encoding="utf-8")

    def _write(self, **record: object) -> None:
        self._out.write(json.dumps(dict(record, t=time.monotonic())) + "\n")
        self._out.flush()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write(kind="task", task=task._uuid, name=task.get_name(), action=task.action)

    def _result(self, result, status: str) -> None:
        self._write(kind="result", task=result._task._uuid, host=result._host.get_name(), status=status)

    def v2_runner_on_ok(self, result):
        self._result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        self._write(kind="end")
        self._out.close()
