# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: scheduled_events_history
type: notification
short_description: Append every Scheduled Events observation and approval to a history file
version_added: 0.1.0
description:
  - Captures on the control node every document read by M(azure_imds.scheduled_events.scheduled_events_info) or
    M(azure_imds.scheduled_events.scheduled_events_claim) (each host, each loop item, each C(until) attempt) and every approval sent by
    M(azure_imds.scheduled_events.scheduled_events_approve), and appends them to a JSON-lines history file in
    the collection's observation schema (C(docs/reference/observation-schema.md) in the source repository).
  - It only reads task results. It adds no task and sends no request to any VM.
  - An observation line holds C(observed_at) (when the module read the document), C(host) (the inventory
    hostname, or the C(delegate_to) host of a delegated task), C(vm) (from the module's C(this_vm), with
    V("") or V(null) for what it did not report), C(document_incarnation), and C(events), the C(Events) array
    exactly as served (the module's C(raw.Events)). When IMDS answered with an empty body
    (C(document_available=false)), C(document_incarnation) is V(null) and C(events) is empty.
  - A read that failed (the module failed, the host was unreachable, the task was skipped) observed nothing and
    writes nothing. A read that succeeded but was marked failed by C(failed_when), or by C(until) running out of
    retries, still holds the document it read and is written.
  - An approval line (C(record) V(approval)) is written for each approve result with a non-empty C(approved)
    list, unless the task ran in check mode (nothing was sent). Its C(results) maps each id to V(started) when
    the module's C(wait_for_start) saw it start, else to V(approved). It carries C(vm) when an earlier
    observation of that host in the same run told which VM it is.
  - An action line (C(record) V(action)) is written when the maintenance_cycle role begins a host's prepare or
    recover tasks for an event (C(action) V(prepare) or V(recover), C(event_ids) with that one event,
    C(event_type)), at the time the role includes them; the reaction analysis reads seen -> prepared -> approved
    from these lines.
  - Approval and action lines carry C(trigger), how the cycle was run, from the play's
    C(maintenance_cycle_trigger) (an extra var or a play var), one of V(event-driven) (the shipped rulebooks set it),
    V(watch) (the retired watch playbook set it), V(schedule) when nothing sets it (the cycle playbook run by hand, from
    cron or on an AWX schedule), V(other) for any other value.
  - Concurrent runs can share one file. Each write takes an exclusive C(flock) lock on the file and appends
    whole lines with one C(write). A line left torn by a killed writer is ended before the next record is
    written, so it stays the only unreadable line.
  - Capture never fails a run. When the file cannot be written, a warning names the path and the cause, and the
    run goes on.
requirements:
  - enable in callbacks_enabled
options:
  path:
    description:
      - The history file. Missing parent directories are created.
      - The environment variable takes precedence over the ini setting (as for every Ansible option).
    type: path
    default: ~/.ansible/scheduled_events/history.jsonl
    env:
      - name: SCHEDULED_EVENTS_HISTORY_PATH
    ini:
      - section: scheduled_events_history
        key: path
  metrics_path:
    description:
      - A Prometheus textfile (C(.prom), for node_exporter's textfile collector) that the callback rewrites at the
        end of each run with the controller's metrics (C(docs/reference/metrics.md) in the source repository), which are cycles,
        prepares and recovers begun, recover failures, approvals by result, fault domains in maintenance, and the
        reaction (first read showing an event -> prepare began) as a histogram, by way of running. Counters
        across runs are kept beside it in C(<metrics_path>.counters.json). V("") (the default) writes none.
      - A leading C(~) is the home of the user running Ansible.
    type: str
    default: ""
    env:
      - name: SCHEDULED_EVENTS_METRICS_PATH
    ini:
      - section: scheduled_events_history
        key: metrics_path
notes:
  - To enable it, set C(callbacks_enabled = azure_imds.scheduled_events.scheduled_events_history) in the
    C([defaults]) section of C(ansible.cfg) (or E(ANSIBLE_CALLBACKS_ENABLED)), and optionally
    C(path = /var/lib/maintenance/history.jsonl) in its C([scheduled_events_history]) section (or
    E(SCHEDULED_EVENTS_HISTORY_PATH)).
  - With C(wait_for_change=true) the info module returns only the last document it read, so only that one is
    captured.
  - Results of C(no_log) tasks are censored before callbacks see them and are not captured.
  - The lock is an advisory C(flock) lock. A write waits up to 10 seconds for it; after one such timeout, records
    are written only while the lock is free, so a stuck lock never holds a run up twice. On file systems without
    C(flock) (some network file systems) the file is written without it, after a warning.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
"""

import fcntl
import os
import threading
import time

from ansible import context
from ansible.plugins.callback import CallbackBase
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_records import (
    APPROVE_MODULE, record_line, record_of_result, trigger_of)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import replace_file
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_file import (
    LOCK_TIMEOUT_S, HistoryFile, NoFlock, flock_within)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import render
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import read_text_file
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.cycle_metrics import (
    RunTally, add_run, controller_families, counters_text, load_counters, tally_plan, tally_record)

TRIGGER_VAR = "maintenance_cycle_trigger"
PLAN_FACT = "maintenance_cycle_plan"   # the role's plan, set once per cycle: counted for the metrics

DEFAULT_PATH = "~/.ansible/scheduled_events/history.jsonl"


class CallbackModule(CallbackBase):
    """Append scheduled_events_info observations and scheduled_events_approve approvals to a JSON-lines history."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "azure_imds.scheduled_events.scheduled_events_history"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._mutex = threading.Lock()  # item and retry callbacks arrive on the results thread
        self._history = None
        self._vms = {}
        self._warned = set()
        self._trigger = trigger_of(None)
        self._tally = RunTally()

    # ---- Ansible events -------------------------------------------------------------------------

    def v2_playbook_on_play_start(self, play):
        try:
            self._trigger = trigger_of(_play_var(play, TRIGGER_VAR))
        except Exception:  # pylint: disable=broad-exception-caught  # capture must never fail a run
            self._trigger = trigger_of(None)
        if self._trigger != trigger_of(None):
            self._tally.trigger = self._trigger   # a run's way of running: any play that names one

    def v2_playbook_on_stats(self, stats):
        path = self._metrics_path()
        if not path:
            return
        try:
            self._tally.failed_hosts = set(h for h in stats.processed if stats.failures.get(h) or stats.dark.get(h))
            self._write_metrics(path)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # metrics must never fail a run
            self._warn_once("scheduled_events_history: could not write the metrics file %s: %s; the run goes on."
                            % (path, _cause(exc)))
        self._tally = RunTally()

    def v2_runner_on_ok(self, result):
        self._capture(result, loop_summary_possible=True)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._capture(result, loop_summary_possible=True)

    def v2_runner_item_on_ok(self, result):
        self._capture(result)

    def v2_runner_item_on_failed(self, result):
        self._capture(result)

    def v2_runner_retry(self, result):
        self._capture(result)

    # ---- capture --------------------------------------------------------------------------------

    def _capture(self, result, loop_summary_possible=False):
        try:
            with self._mutex:
                record = self._record_of(result, loop_summary_possible)
                if record is not None:
                    self._write(record_line(record))
                    tally_record(self._tally, record, time.time())
        except Exception as exc:  # pylint: disable=broad-exception-caught  # capture must never fail a run
            self._warn_once("scheduled_events_history: could not record a result in %s: %s." % (self._path_for_messages(), _cause(exc)))

    def _record_of(self, result, loop_summary_possible):
        data = _attr(result, "result", "_result")
        if not isinstance(data, dict):
            return None
        if loop_summary_possible and isinstance(data.get("results"), list):
            return None  # a loop's summary: its items were captured one by one
        task = _attr(result, "task", "_task")
        fields = _attr(result, "task_fields", "_task_fields") or {}
        short = _action(task, fields).rsplit(".", 1)[-1]
        plan = (data.get("ansible_facts") or {}).get(PLAN_FACT) if short == "set_fact" else None
        if plan is not None:
            tally_plan(self._tally, plan)
            return None
        if short == APPROVE_MODULE and data.get("failed") and not _check_mode(task, fields):
            self._tally.approvals["failed"] += 1
        host = _who_polled(result, fields)
        return record_of_result(short, host, data, self._vms, trigger=self._trigger,
                                check_mode=_check_mode(task, fields))

    # ---- writing --------------------------------------------------------------------------------

    def _write(self, data):
        history = self._history_file()
        try:
            history.append(data)
        except TimeoutError as exc:
            if history.lock_timeout:
                self._warn_once("scheduled_events_history: could not lock the history file %s: %s; records are skipped "
                                "while it stays locked, and the run goes on." % (history.path, _cause(exc)))
            history.lock_timeout = 0  # never hold the run up twice: later records are written only if the lock is free
            return
        except Exception as exc:  # pylint: disable=broad-exception-caught  # capture must never fail a run
            self._warn_once("scheduled_events_history: could not append to the history file %s: %s; "
                            "the run goes on without recording there." % (history.path, _cause(exc)))
            return
        if history.unlocked_warning:
            self._warn_once("scheduled_events_history: %s: %s." % (history.path, history.unlocked_warning))

    def _history_file(self):
        if self._history is None:
            self._history = HistoryFile(self._configured_path())
        return self._history

    def _configured_path(self):
        try:
            path = self.get_option("path")
        except Exception:  # pylint: disable=broad-exception-caught  # options not loaded: fall back like the documentation says
            path = os.environ.get("SCHEDULED_EVENTS_HISTORY_PATH") or DEFAULT_PATH
        return os.path.abspath(os.path.expanduser(path or DEFAULT_PATH))

    def _metrics_path(self):
        try:
            path = self.get_option("metrics_path")
        except Exception:  # pylint: disable=broad-exception-caught  # options not loaded: the environment, as documented
            path = os.environ.get("SCHEDULED_EVENTS_METRICS_PATH")
        return os.path.abspath(os.path.expanduser(path)) if path else ""

    def _write_metrics(self, path):
        """Add this run to the counters beside the textfile and rewrite both, under a lock shared by concurrent
        runs (event-driven cycles run in parallel); the textfile is readable by node_exporter (0644)."""
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        counters_path = path + ".counters.json"
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            try:
                flock_within(fd, LOCK_TIMEOUT_S)
                locked = True
            except NoFlock:
                locked = False   # as the history file: written without a lock where flock does not exist
            try:
                text = read_text_file(counters_path)   # unreadable: the run warns and leaves both files as they are
                counters, problem = load_counters(text)
                if problem:
                    self._warn_once("scheduled_events_history: %s: %s" % (counters_path, problem))
                counters = add_run(counters, self._tally, time.time())
                replace_file(counters_path, counters_text(counters), prefix=".metrics-", mode=0o644)
                replace_file(path, render(controller_families(counters)), prefix=".metrics-", mode=0o644)
            finally:
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _path_for_messages(self):
        return self._history.path if self._history is not None else "the history file"

    def _warn_once(self, message):
        if message not in self._warned:
            self._warned.add(message)
            try:
                self._display.warning(message)
            except Exception:  # pylint: disable=broad-exception-caught  # a display failure must not fail the run either
                pass


def _attr(result, name, legacy):
    """A TaskResult attribute by its ansible-core 2.19 name, else by its older private name."""
    value = getattr(result, name, None)
    return value if value is not None else getattr(result, legacy, None)


def _action(task, fields):
    """The task's resolved action (FQCN) when known, else its action as written."""
    for value in (fields.get("_resolved_action"), getattr(task, "_resolved_action", None), fields.get("action"),
                  getattr(task, "action", None)):
        if isinstance(value, str) and value:
            return value
    return ""


def _play_var(play, name):
    """A variable as the play sets it: extra vars first (the rulebooks), then the play's own vars."""
    manager = play.get_variable_manager() if hasattr(play, "get_variable_manager") else None
    extra = getattr(manager, "extra_vars", None) or {}
    if name in extra:
        return extra[name]
    return (getattr(play, "vars", None) or {}).get(name)


def _who_polled(result, fields):
    delegate = fields.get("delegate_to")
    if isinstance(delegate, str) and delegate and "{{" not in delegate:
        return delegate
    host = _attr(result, "host", "_host")
    return host.get_name() if host is not None else "unknown"


def _check_mode(task, fields):
    """Whether the task ran in check mode: the worker's resolved task field, else the task, else --check."""
    for value in (fields.get("check_mode"), getattr(task, "check_mode", None)):
        if isinstance(value, bool):
            return value
    return bool(context.CLIARGS.get("check", False))


def _cause(exc):
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or exc.__class__.__name__
