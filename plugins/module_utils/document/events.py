# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Scheduled Events document means: pure functions, no I/O.

Shared by the modules (on the VM), action plugins and the history callback
(on the controller) and the tests. Runs on Python 3.8+ with the standard
library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

KNOWN_EVENT_TYPES = ("Freeze", "Reboot", "Redeploy", "Preempt", "Terminate")
KNOWN_EVENT_STATUSES = ("Scheduled", "Started")
# What only the control plane says (Event Grid, Resource Graph): the event is over, or will not happen. IMDS says
# either by leaving the event out of its document.
ENDED_STATUSES = ("Completed", "Canceled")

_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6})\d*)?"
    r"(Z|[+-]\d{2}:?\d{2})?$"
)
# ASCII only: str.isdigit() and re's \d also accept other scripts' digits ("²"), which int() may refuse.
_DIGITS = re.compile(r"[0-9]+")
# EventIds end up in file names and log lines (the example prepare tasks), so only the GUID shape passes.
_GUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


class DocumentError(ValueError):
    """A document that cannot be used. The message is one sentence naming the cause."""


def decode_body(body):
    """Bytes from IMDS -> text; None for an empty body ("no document yet")."""
    if body is None:
        return None
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise DocumentError("IMDS answered with bytes that are not UTF-8 text.")
    if not body.strip():
        return None
    return body


def parse_document(body):
    """Parse and validate a GET body (text, bytes or an already-decoded dict).

    Returns None for an empty body (IMDS answers 200 with nothing right after
    it is enabled), else a dict with `document_incarnation` (int), `events`
    (normalised), `warnings` (unknown types or statuses: kept, flagged) and
    `raw` (the document as served).
    """
    if isinstance(body, dict):
        data = body
    else:
        text = decode_body(body)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DocumentError("IMDS answered with malformed JSON (%s)." % exc)
    if not isinstance(data, dict) or "Events" not in data or "DocumentIncarnation" not in data:
        raise DocumentError(
            "IMDS answered with JSON that is not a Scheduled Events document "
            "(expected an object with DocumentIncarnation and Events)."
        )
    incarnation = parse_incarnation(data["DocumentIncarnation"])
    if not isinstance(data["Events"], list):
        raise DocumentError("the document's Events is not a list.")
    events = [normalise_event(raw, index) for index, raw in enumerate(data["Events"])]
    warnings = []
    for event in events:
        warnings.extend(event_warnings(event))
    return {"document_incarnation": incarnation, "events": events, "warnings": warnings, "raw": data}


def parse_incarnation(value):
    """An integer, or a string of digits (seen in the wild); anything else is an error."""
    if isinstance(value, bool):
        raise DocumentError("DocumentIncarnation %r is not a number." % (value,))
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        if len(value.strip().lstrip("0")) > MAX_INCARNATION_DIGITS:  # int() of thousands of digits raises
            raise DocumentError("DocumentIncarnation has %d digits, more than any document can have counted."
                                % len(value.strip()))
        number = int(value.strip())
    else:
        raise DocumentError("DocumentIncarnation %r is not a whole number." % (value,))
    if number < 0:
        raise DocumentError("DocumentIncarnation %d is negative." % number)
    if number >= 10 ** MAX_INCARNATION_DIGITS:
        raise DocumentError("DocumentIncarnation has %d digits, more than any document can have counted."
                            % len(str(number)))
    return number


MAX_INCARNATION_DIGITS = 30


def parse_not_before(value):
    """`NotBefore` as an aware UTC datetime, or None when empty (Started events).

    Accepts RFC 1123 (`Mon, 19 Sep 2016 18:29:47 GMT`, what IMDS serves) and
    ISO 8601 (`2016-09-19T18:29:47Z`, the 2017 edition).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise DocumentError("NotBefore %r is not text." % (value,))
    text = value.strip()
    match = _ISO.match(text)
    if match:
        return _from_iso(match, text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        moment = None
    if moment is None:
        raise DocumentError("NotBefore %r is neither an RFC 1123 nor an ISO 8601 date." % text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise DocumentError("NotBefore %r is outside the calendar once in UTC." % text)


def _from_iso(match, text):
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                          int((fraction or "0").ljust(6, "0")), tzinfo=timezone.utc)
    except ValueError:
        raise DocumentError("NotBefore %r is not a valid date." % text)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            moment -= sign * offset
        except OverflowError:
            raise DocumentError("NotBefore %r is outside the calendar once in UTC." % text)
    return moment


def iso_utc(moment):
    """ISO 8601 UTC with `Z`, whole seconds: how normalised events carry times."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def is_event_id(text):
    """Whether `text` has an EventId's shape (a GUID, either case)."""
    return isinstance(text, str) and _GUID.fullmatch(text) is not None


def normalise_event(raw, index=0):
    """One raw event -> snake_case keys, `not_before` as ISO 8601 UTC or None.

    Fields missing in older api-versions become None; the raw event is kept. EventId must be a GUID
    (either case, kept as served): anything else is refused, since ids end up in file names and logs.
    """
    where = "event %d" % index
    if not isinstance(raw, dict):
        raise DocumentError("%s of the document is not an object." % where)
    event_id = raw.get("EventId")
    if not isinstance(event_id, str) or not event_id.strip():
        raise DocumentError("%s has no EventId." % where)
    if not is_event_id(event_id):
        raise DocumentError("%s has EventId %r, which is not a GUID (8-4-4-4-12 hex digits, as IMDS serves them)."
                            % (where, event_id))
    where = "event %s" % event_id
    resources = raw.get("Resources", [])
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise DocumentError("%s has Resources that are not a list of names." % where)
    for field in ("EventType", "EventStatus"):
        if not isinstance(raw.get(field), str):
            raise DocumentError("%s has no %s." % (where, field))
    duration = raw.get("DurationInSeconds")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int)):
        raise DocumentError("%s has a DurationInSeconds that is not a whole number." % where)
    try:
        not_before = parse_not_before(raw.get("NotBefore"))
    except DocumentError as exc:
        raise DocumentError("%s: %s" % (where, exc))
    return {
        "event_id": event_id,
        "event_type": raw["EventType"],
        "event_status": raw["EventStatus"],
        "resource_type": raw.get("ResourceType"),
        "resources": list(resources),
        "not_before": iso_utc(not_before),
        "description": raw.get("Description"),
        "event_source": raw.get("EventSource"),
        "duration_in_seconds": duration,
        "known_type": raw["EventType"] in KNOWN_EVENT_TYPES,
        "known_status": raw["EventStatus"] in KNOWN_EVENT_STATUSES,
    }


def event_warnings(event):
    warnings = []
    if not event["known_type"]:
        warnings.append("event %s has unknown EventType %r; it is kept and never approved (prepared only where its "
                        "type is listed in prepare_event_types)."
                        % (event["event_id"], event["event_type"]))
    if not event["known_status"]:
        warnings.append("event %s has unknown EventStatus %r; it is kept but never approved."
                        % (event["event_id"], event["event_status"]))
    return warnings


def resource_name(name):
    """A `Resources` entry as a comparable VM name (2017-03-01 prefixed `_`)."""
    return name[1:].lower() if name.startswith("_") else name.lower()


def affects(event, vm_name):
    """Does the event list this VM? Exact, case-insensitive; never a substring match."""
    if not vm_name:
        return False
    wanted = resource_name(vm_name)
    return any(resource_name(r) == wanted for r in event.get("resources", []))


def seconds_to_not_before(event, now):
    """Seconds from `now` to the event's NotBefore (negative once past), or None."""
    if not event.get("not_before"):
        return None
    moment = parse_not_before(event["not_before"])
    return round((moment - now).total_seconds(), 3)


def annotate(events, vm_name, now):
    """Add `affects_this_vm` and `seconds_to_not_before` to normalised events."""
    annotated = []
    for event in events:
        item = dict(event)
        item["affects_this_vm"] = affects(event, vm_name) if vm_name else None
        item["seconds_to_not_before"] = seconds_to_not_before(event, now)
        annotated.append(item)
    return annotated


def events_of(previous):
    """Normalised events from what a user passes as `previous`.

    Accepts an earlier info-module result (`events`), a raw document
    (`DocumentIncarnation`/`Events`) or a list of events; None -> (None, []).
    Returns (incarnation or None, events).
    """
    if previous is None or previous == {}:
        return None, []
    if isinstance(previous, str):
        try:
            previous = json.loads(previous)
        except ValueError:
            raise DocumentError("previous is text that is not JSON.")
    if isinstance(previous, list):
        return None, [_as_normalised(e, i) for i, e in enumerate(previous)]
    if not isinstance(previous, dict):
        raise DocumentError("previous must be an earlier result, a raw document or a list of events.")
    if "Events" in previous:
        parsed = parse_document(previous)
        return parsed["document_incarnation"], parsed["events"]
    if "events" in previous:
        if not isinstance(previous["events"], list):
            raise DocumentError("previous.events is not a list.")
        incarnation = previous.get("document_incarnation")
        incarnation = None if incarnation is None else parse_incarnation(incarnation)
        return incarnation, [_as_normalised(e, i) for i, e in enumerate(previous["events"])]
    raise DocumentError("previous has neither events nor Events.")


def _as_normalised(event, index):
    if isinstance(event, dict) and "EventId" in event:
        return normalise_event(event, index)
    if not isinstance(event, dict) or not isinstance(event.get("event_id"), str):
        raise DocumentError("previous event %d has no event_id." % index)
    return event


_COMPARED = ("event_type", "resources", "not_before", "description", "event_source", "duration_in_seconds")


def diff_events(previous, current, previous_incarnation=None, current_incarnation=None):
    """What changed between two lists of normalised events.

    new: ids not seen before; started: now Started and not Started before
    (events first seen already Started included); removed: seen before, gone
    now (completed or cancelled); updated: seen before, still there, and some
    other field changed (e.g. NotBefore moved).
    """
    before = dict((e["event_id"].upper(), e) for e in previous)
    after = dict((e["event_id"].upper(), e) for e in current)
    result = {"new": [], "started": [], "removed": [], "updated": []}
    for key, event in after.items():
        old = before.get(key)
        if old is None:
            result["new"].append(event)
        if event["event_status"] == "Started" and (old is None or old["event_status"] != "Started"):
            result["started"].append(event)
        elif old is not None and _changed(old, event):
            result["updated"].append(event)
    result["removed"] = [e for key, e in before.items() if key not in after]
    result["changed"] = any(result[k] for k in ("new", "started", "removed", "updated"))
    result["incarnation_went_backwards"] = (
        previous_incarnation is not None and current_incarnation is not None
        and current_incarnation < previous_incarnation
    )
    return result


def _changed(old, new):
    if old["event_status"] != new["event_status"]:
        return True
    return any(old.get(f) != new.get(f) for f in _COMPARED)


def compute_facts(compute):
    """The `this_vm` facts from `/metadata/instance/compute`."""
    if not isinstance(compute, dict) or not isinstance(compute.get("name"), str):
        raise DocumentError("IMDS compute metadata has no VM name.")
    return {
        "name": compute["name"],
        "resource_id": compute.get("resourceId", ""),
        "vm_scale_set_name": compute.get("vmScaleSetName", ""),
        "fault_domain": _int_or_none(compute.get("platformFaultDomain")),
        "update_domain": _int_or_none(compute.get("platformUpdateDomain")),
        "zone": compute.get("zone", ""),
        "location": compute.get("location", ""),
        "os_type": compute.get("osType", ""),
    }


def ephemeral_os_disk(compute):
    """Whether `/metadata/instance/compute` says the OS disk is ephemeral (storageProfile.osDisk.diffDiskSettings.option
    Local): a reimage or a move to another node (Redeploy, service healing) gives the VM a fresh one."""
    try:
        option = compute["storageProfile"]["osDisk"]["diffDiskSettings"]["option"]
    except (KeyError, TypeError):
        return False
    return isinstance(option, str) and option.lower() == "local"


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
