# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance cycle's state file on the VM: what was seen, what was prepared, what was approved.

Pure functions only. The file is JSON; its content is deterministic (sorted, no
time-varying fields), so that a cycle with no change writes nothing.

Version 2 keeps, per event, how far this VM's prepare went (`prepare`: null,
"started" or "done"), and keeps an event after it left the document for as long
as it is owed a recover. So a prepare is never forgotten before its recover ran,
whatever fails in between, and its fault domain stays in maintenance until then.
Every field is validated on load: a state this code cannot trust is "corrupt",
never a traceback. A cycle neither uses nor overwrites it: it may owe recovers,
so the host counts as busy until a person moves the file aside.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

STATE_VERSION = 2
PREPARE_STARTED = "started"  # prepare began (and may have failed half-way): a recover is owed, no approval
PREPARE_DONE = "done"  # prepare completed: approval may rely on it
_EVENT_FIELDS = ("event_id", "event_type", "event_status", "resources", "not_before", "event_source",
                 "duration_in_seconds", "description")
_OPTIONAL_TEXT = ("not_before", "event_source", "description")


UNTRUSTED_ADVICE = ("the maintenance cycle leaves it as it is and counts this VM as busy (it may owe recovers); "
                    "once the VM is known not to be drained, move the file aside so that the next cycle starts "
                    "afresh.")


def empty_state():
    return {"version": STATE_VERSION, "document_incarnation": None, "events": [], "approved": []}


def load_state(text):
    """(state, status, message): status is loaded, missing (text None) or corrupt.

    A missing file is not news worth a warning (every quiet VM starts without one), so its message is empty.
    """
    if text is None:
        return None, "missing", ""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, "corrupt", "the state file is not JSON (%s); %s" % (exc, UNTRUSTED_ADVICE)
    if isinstance(data, dict) and data.get("version") == 1:
        data = _from_version_1(data)
    problem = state_problem(data)
    if problem:
        return None, "corrupt", "the state file %s; %s" % (problem, UNTRUSTED_ADVICE)
    return data, "loaded", ""


def state_problem(data):
    """What makes `data` an untrustworthy state, in a few words; None when it is valid."""
    if not isinstance(data, dict):
        return "is not a JSON object"
    if data.get("version") != STATE_VERSION:
        return "has version %r, not %d" % (data.get("version"), STATE_VERSION)
    incarnation = data.get("document_incarnation")
    if incarnation is not None and (isinstance(incarnation, bool) or not isinstance(incarnation, int)
                                    or incarnation < 0):
        return "has a document_incarnation that is not a whole number of 0 or more"
    for key in ("events", "approved"):
        if not isinstance(data.get(key), list):
            return "has no %s list" % key
    for index, event in enumerate(data["events"]):
        problem = _event_problem(event)
        if problem:
            return "holds an event (%d) %s" % (index, problem)
    if not all(isinstance(i, str) and i.strip() for i in data["approved"]):
        return "holds an approved event id that is not text"
    return None


def _event_problem(event):
    if not isinstance(event, dict):
        return "that is not an object"
    for key in ("event_id", "event_type", "event_status"):
        if not isinstance(event.get(key), str) or not event[key].strip():
            return "without %s" % key
    resources = event.get("resources")
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        return "whose resources are not a list of names"
    for key in _OPTIONAL_TEXT:
        if event.get(key) is not None and not isinstance(event[key], str):
            return "whose %s is not text" % key
    duration = event.get("duration_in_seconds")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int)):
        return "whose duration_in_seconds is not a whole number"
    if event.get("prepare") not in (None, PREPARE_STARTED, PREPARE_DONE):
        return "whose prepare is not null, %r or %r" % (PREPARE_STARTED, PREPARE_DONE)
    if "late" in event and event["late"] is not True:
        return "whose late mark is not true"
    return None


def _from_version_1(data):
    """Version 1 (prepared ids only) as version 2, so that an upgrade keeps what was prepared."""
    if not isinstance(data.get("events"), list) or not isinstance(data.get("prepared"), list):
        return data  # the validation says what is wrong
    prepared = set(i.upper() for i in data["prepared"] if isinstance(i, str))
    events = []
    for event in data["events"]:
        if isinstance(event, dict) and isinstance(event.get("event_id"), str):
            event = dict(event, prepare=PREPARE_DONE if event["event_id"].upper() in prepared else None)
        events.append(event)
    return {"version": STATE_VERSION, "document_incarnation": data.get("document_incarnation"),
            "events": events, "approved": data.get("approved")}


def event_record(event, prepare=None, late=False):
    """What the state keeps of a normalised event (nothing that changes with time). `late` (kept only when true,
    so that states without late prepares are unchanged): prepared over the fault-domain limit as NotBefore was
    near, and so left to NotBefore."""
    record = dict((key, event.get(key)) for key in _EVENT_FIELDS)
    record["prepare"] = prepare
    if late:
        record["late"] = True
    return record


def with_approved(state, event_ids):
    """The state with `event_ids` on record as approved (write-ahead: before the POST that sends them)."""
    known = set(i.upper() for i in state["approved"])
    added = [i for i in event_ids if i.upper() not in known]
    return dict(state, approved=sorted(list(state["approved"]) + added, key=lambda i: i.upper()))


def state_text(state):
    """The file's content: deterministic, so an unchanged state is an unchanged file."""
    return json.dumps(state, indent=2, sort_keys=True) + "\n"
