# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""History records (docs/reference/observation-schema.md) from module results: pure, no I/O.

Shared by the scheduled_events_history callback (live capture) and by the analysis
loaders that rebuild a history from AWX job events or ansible-runner artifacts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from datetime import datetime, timezone

# The modules whose results are history records (by short name): a read, plain or a cycle's (under its lock).
READ_MODULES = ("scheduled_events_info", "scheduled_events_claim")
# A record's `source`: absent for IMDS (every record before the control-plane transport), else this.
CONTROL_PLANE = "control_plane"
APPROVE_MODULE = "scheduled_events_approve"

# The role's prepare and recover includes name their loop index (loop_control.index_var) so that each loop
# item's result says which of the two began on its host, and for which event (the item): an action record.
ACTION_INDEX_VARS = {"maintenance_cycle_prepare_index": "prepare", "maintenance_cycle_recover_index": "recover"}
# How the cycle was run, from the play's `maintenance_cycle_trigger` (the rulebooks set it; `watch`: the retired watch
# playbook set it, and the histories it captured still carry it).
TRIGGERS = ("schedule", "watch", "event-driven")
DEFAULT_TRIGGER = "schedule"   # the cycle playbook run by hand, from cron or on an AWX schedule

UTC_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def utc_now_iso():
    """Now, UTC, ISO 8601 with milliseconds and Z (the schema's `observed_at` form)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_line(record):
    """One compact JSON line, UTF-8 bytes with its newline."""
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _text(value):
    return value if isinstance(value, str) else ""


def _domain(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def vm_of(host, this_vm):
    """The schema's complete `vm` object from the module's `this_vm` (unknown fields "" or null)."""
    facts = this_vm if isinstance(this_vm, dict) else {}
    name = facts.get("name")
    return {
        "name": name if isinstance(name, str) and name else host,
        "resource_id": _text(facts.get("resource_id")),
        "vm_scale_set_name": _text(facts.get("vm_scale_set_name")),
        "fault_domain": _domain(facts.get("fault_domain")),
        "update_domain": _domain(facts.get("update_domain")),
        "zone": _text(facts.get("zone")),
        "location": _text(facts.get("location")),
    }


def is_completed_read(data):
    """Whether an info result holds a document read (the module exited normally, output not censored)."""
    return isinstance(data.get("observed_at"), str) and isinstance(data.get("document_available"), bool) and "raw" in data


def observation(host, data):
    """An observation record from a completed scheduled_events_info result."""
    raw = data.get("raw")
    if data.get("document_available") is False or not isinstance(raw, dict):
        incarnation, events = None, []
    else:
        incarnation = raw.get("DocumentIncarnation", data.get("document_incarnation"))
        events = raw.get("Events")
        events = events if isinstance(events, list) else []
    observed_at = data["observed_at"] if UTC_PATTERN.match(data["observed_at"]) else utc_now_iso()
    record = {"observed_at": observed_at, "host": host, "vm": vm_of(host, data.get("this_vm")),
              "document_incarnation": incarnation, "events": events}
    if data.get("transport") == "control_plane":  # read from Resource Graph, which also shows how events ended
        ended = data.get("control_plane_ended")
        record.update(source=CONTROL_PLANE, events=events + [e for e in ended or [] if isinstance(e, dict)])
    return record


def trigger_of(value):
    """The way of running a play names: one of TRIGGERS, "other" for anything else it names (labels stay
    bounded), DEFAULT_TRIGGER when it names none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_TRIGGER
    text = str(value).strip().lower()
    return text if text in TRIGGERS else "other"


def action_kind(data):
    """"prepare" or "recover" when `data` is the result of one loop item of the role's prepare or recover
    include (the step began on that host for that event); None for any other result."""
    kind = ACTION_INDEX_VARS.get(data.get("ansible_index_var"))
    event = data.get("maintenance_cycle_event")
    if kind and isinstance(event, dict) and isinstance(event.get("event_id"), str) and event["event_id"]:
        return kind
    return None


def action(host, data, vm, trigger=None, observed_at=None):
    """An action record (a prepare or recover began), or None when `data` is no such result."""
    kind = action_kind(data)
    if kind is None:
        return None
    event = data["maintenance_cycle_event"]
    record = {"record": "action", "observed_at": observed_at or utc_now_iso(), "host": host, "action": kind,
              "event_ids": [event["event_id"]], "event_type": _text(event.get("event_type"))}
    return _with(record, vm, trigger)


def local_action(host, event, vm, observed_at):
    """The relay ran the VM's local command (its fast path) for a raw event it first saw."""
    record = {"record": "action", "observed_at": observed_at, "host": host, "action": "local",
              "event_ids": [event["EventId"]], "event_type": _text(event.get("EventType"))}
    return _with(record, vm, "relay")


def _with(record, vm, trigger):
    if vm is not None:
        record["vm"] = vm
    if trigger is not None:
        record["trigger"] = trigger
    return record


def approval(host, data, vm, observed_at=None, trigger=None):
    """An approval record, or None when the result sent nothing.

    `observed_at`: when the result reached the control node (now, for a live capture;
    the job event's time when rebuilt from AWX or ansible-runner events)."""
    approved = [i for i in data.get("approved") or [] if isinstance(i, str) and i]
    if not approved:
        return None
    started = set(i.upper() for i in data.get("started") or [] if isinstance(i, str))
    record = {"record": "approval", "observed_at": observed_at or utc_now_iso(), "host": host, "event_ids": approved,
              "results": dict((i, "started" if i.upper() in started else "approved") for i in approved)}
    if data.get("transport") == CONTROL_PLANE:  # a Microsoft.Maintenance acknowledge, not an IMDS POST
        record["source"] = CONTROL_PLANE
    return _with(record, vm, trigger)


def record_of_result(module, host, data, vms, observed_at=None, trigger=None, check_mode=False):
    """The history record a task's result makes, or None: the one rule of what is recorded, for the live
    callback and for histories rebuilt from AWX jobs and ansible-runner artifacts.

    `module` is the task's action without its collection; `vms` ({host: vm}) learns each read's VM, so that later
    approvals and actions of that host name it. A skipped task and an approval in check mode record nothing."""
    if module == "include_tasks":
        return action(host, data, vms.get(host), trigger=trigger, observed_at=observed_at)
    if data.get("skipped"):
        return None
    if module in READ_MODULES:
        if not is_completed_read(data):
            return None
        record = observation(host, data)
        vms[host] = record["vm"]
        return record
    if module == APPROVE_MODULE and not check_mode:
        return approval(host, data, vms.get(host), observed_at=observed_at, trigger=trigger)
    return None
