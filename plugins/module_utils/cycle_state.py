# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance cycle's state file on the VM: what was seen, prepared, approved.

Pure functions only. The file is JSON; its content is deterministic (sorted,
no time-varying fields), so that a cycle with no change writes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

STATE_VERSION = 1
_EVENT_FIELDS = ("event_id", "event_type", "event_status", "resources", "not_before", "event_source",
                 "duration_in_seconds", "description")


def empty_state():
    return {"version": STATE_VERSION, "document_incarnation": None, "events": [], "prepared": [], "approved": []}


def load_state(text):
    """(state, status, message): status is loaded, missing (text None) or corrupt."""
    if text is None:
        return None, "missing", "no state file yet: this is the first cycle on this VM."
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, "corrupt", "the state file is not JSON (%s); starting as a first cycle." % exc
    problem = _state_problem(data)
    if problem:
        return None, "corrupt", "the state file %s; starting as a first cycle." % problem
    return data, "loaded", ""


def _state_problem(data):
    if not isinstance(data, dict):
        return "is not a JSON object"
    if data.get("version") != STATE_VERSION:
        return "has version %r, not %d" % (data.get("version"), STATE_VERSION)
    for key in ("events", "prepared", "approved"):
        if not isinstance(data.get(key), list):
            return "has no %s list" % key
    for event in data["events"]:
        if not isinstance(event, dict) or not isinstance(event.get("event_id"), str):
            return "holds an event without event_id"
    if not all(isinstance(i, str) for i in data["prepared"] + data["approved"]):
        return "holds an event id that is not text"
    return None


def event_record(event):
    """What the state keeps of a normalised event (nothing that changes with time)."""
    return dict((key, event.get(key)) for key in _EVENT_FIELDS)


def next_state(incarnation, events, prepared, approved):
    """The state to save: ids kept only while their event is still in the document."""
    present = set(e["event_id"].upper() for e in events)
    return {
        "version": STATE_VERSION,
        "document_incarnation": incarnation,
        "events": sorted((event_record(e) for e in events), key=lambda e: e["event_id"]),
        "prepared": sorted(set(i.upper() for i in prepared) & present),
        "approved": sorted(set(i.upper() for i in approved) & present),
    }
