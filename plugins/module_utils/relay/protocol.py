# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event relay's decisions, shared by both ends of a push.

On the VM, the relay polls IMDS once a second (roles/event_relay) and asks this module what a poll
means: a change of the document becomes one history record (the observation schema, plus when the
previous document was last seen, so that analysis bounds are one poll wide) and one push to the
controller; between changes, a heartbeat every few seconds says the relay is alive and whether the
VM is quiet. On the controller, the Event-Driven Ansible source checks pushes with the same code.

A push only triggers a cycle; every decision comes from the cycle's own fresh reads on the VMs. Each relay
signs with a key of its own, derived from the controller's shared secret and its host name (relay_key), and
the controller checks a push with the key of the host it names: a VM can speak only for itself.

Pure: clocks, documents and keys come in as values; I/O is the caller's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import is_quiet as quiet_rule
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import resource_name

# The collection's version (galaxy.yml is its home; tests/relay/test_relay_process.py keeps this equal), as the relay
# and the event source say it when they start: which code runs on a VM is the first question of a silent trial.
VERSION = "0.1.0"
PUSH_VERSION = 1
SIGNATURE_HEADER = "X-Scheduled-Events-Signature"
CHANGE = "change"
HEARTBEAT = "heartbeat"
MAX_CLOCK_SKEW_SECONDS = 300.0
MAX_PUSH_BYTES = 1024 * 1024
# An inventory hostname, nothing a host pattern would read as more than one host ("!vm1", "a,b", "all" is
# refused by the source's host list): it ends up in the playbook run's --limit.
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


class PushError(ValueError):
    """A push that must not become an event; the message is one sentence naming the cause, `status` the
    HTTP answer (401: not signed with the key of the host it names, or replayed; 400: malformed)."""

    def __init__(self, message, status=400):
        super(PushError, self).__init__(message)
        self.status = status


def utc_iso(epoch):
    # type: (float) -> str
    """The observation schema's time form: ISO 8601, UTC, milliseconds, Z."""
    moment = datetime.fromtimestamp(epoch, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def document_key(document):
    # type: (Optional[Dict[str, Any]]) -> str
    """What identifies a document's content: its incarnation and events, canonically ("" when blind)."""
    if document is None:
        return ""
    return json.dumps([document.get("DocumentIncarnation"), document.get("Events")], sort_keys=True,
                      separators=(",", ":"))


def lists(event, vm_name):
    # type: (Any, str) -> bool
    """Whether a raw event's Resources name this VM (as the modules match: exact, case-insensitive); an event
    whose Resources cannot be read might, so it counts as listing it (fail closed)."""
    resources = event.get("Resources") if isinstance(event, dict) else None
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        return True
    wanted = resource_name(vm_name)
    return any(resource_name(r) == wanted for r in resources)


def is_quiet(document, state_has_work, vm_name):
    # type: (Optional[Dict[str, Any]], bool, str) -> bool
    """The one quiet rule (cycle/quiet.py) over the relay's raw document."""
    events = (document or {}).get("Events")
    listed = any(lists(event, vm_name) for event in (events if isinstance(events, list) else [events]))
    return quiet_rule(document is not None, vm_name, listed, state_has_work)


def in_started_event(document, vm_name):
    # type: (Optional[Dict[str, Any]], str) -> bool
    """Whether a Started event lists this VM: it is rebooting, redeploying, frozen or going away, and a cycle
    contacting it would only wait for a timeout."""
    events = (document or {}).get("Events")
    return any(isinstance(event, dict) and event.get("EventStatus") == "Started" and lists(event, vm_name)
               for event in (events if isinstance(events, list) else []))


@dataclass
class RelaySettings:
    host: str                      # the VM's inventory hostname, as the controller knows it
    heartbeat_seconds: float = 30.0
    poll_interval: float = 1.0     # written into each record: a change-only series cannot show it


@dataclass
class Step:
    """What one poll asks the relay to do: keep a history record, push something (or neither)."""
    record: Optional[Dict[str, Any]] = None
    push: Optional[Dict[str, Any]] = None


@dataclass
class Tracker:
    """The relay's memory between polls (held in the relay process; rebuilt from the first poll)."""
    settings: RelaySettings
    vm: Dict[str, Any] = field(default_factory=dict)    # the observation schema's vm object
    key: Optional[str] = None                           # the current document's key; None before a first read
    document: Optional[Dict[str, Any]] = None
    seen_at: Optional[float] = None                     # last poll that saw the current document
    last_push_at: Optional[float] = None
    last_success_at: Optional[float] = None
    imds_errors: int = 0
    last_error: str = ""

    def polled(self, at, document, state_has_work):
        # type: (float, Optional[Dict[str, Any]], bool) -> Step
        """A successful poll at `at`: `document` as served (None for an empty 200)."""
        self.last_success_at = at
        was_failing, self.last_error = bool(self.last_error), ""
        key = document_key(document)
        if key == self.key and was_failing:
            # IMDS answers again with the same document: a record all the same, whose previous_observed_at (the
            # last poll before the failures) bounds the silence, as a per-poll history shows it; and a push, so
            # that the controller may contact this VM again.
            previous_seen_at, self.seen_at = self.seen_at, at
            record = self._record(at, document, previous_seen_at)
            return Step(record=record, push=self._push(HEARTBEAT, at, state_has_work, None))
        if key == self.key:
            self.seen_at = at
            return Step(push=self._heartbeat_if_due(at, state_has_work))
        previous_seen_at = self.seen_at
        self.key, self.document, self.seen_at = key, document, at
        record = self._record(at, document, previous_seen_at)
        return Step(record=record, push=self._push(CHANGE, at, state_has_work, record))

    def failed(self, at, error, state_has_work):
        # type: (float, str, bool) -> Step
        """A poll that got no answer: no record (nothing was seen); the first failure is pushed at once (a VM
        rebooting, evicted or frozen: the controller leaves it alone instead of waiting for a timeout), then
        heartbeats go on and say so."""
        self.imds_errors += 1
        first = not self.last_error
        self.last_error = error
        if first:
            return Step(push=self._push(HEARTBEAT, at, state_has_work, None))
        return Step(push=self._heartbeat_if_due(at, state_has_work))

    def _record(self, at, document, previous_seen_at):
        record = {"observed_at": utc_iso(at), "host": self.settings.host, "vm": dict(self.vm),
                  "document_incarnation": None, "events": [], "poll_interval_s": self.settings.poll_interval}
        if document is not None:
            events = document.get("Events")
            record.update(document_incarnation=document.get("DocumentIncarnation"),
                          events=events if isinstance(events, list) else [])
        if previous_seen_at is not None:
            record["previous_observed_at"] = utc_iso(previous_seen_at)
        return record

    def quiet(self, state_has_work):
        """Quiet only on a fresh view: never before a first read, nor while IMDS does not answer."""
        fresh = self.key is not None and not self.last_error
        return fresh and is_quiet(self.document, state_has_work, self.vm.get("name", ""))

    def _heartbeat_if_due(self, at, state_has_work):
        if self.last_push_at is not None and 0 <= at - self.last_push_at < self.settings.heartbeat_seconds:
            return None
        return self._push(HEARTBEAT, at, state_has_work, None)

    def _push(self, kind, at, state_has_work, record):
        self.last_push_at = at
        document = self.document
        push = {"version": PUSH_VERSION, "kind": kind, "host": self.settings.host, "vm": self.vm.get("name", ""),
                "sent_at": utc_iso(at), "quiet": self.quiet(state_has_work), "document_available": document is not None,
                "document_incarnation": (document or {}).get("DocumentIncarnation"),
                "imds_ok": not self.last_error, "imds_errors": self.imds_errors,
                "in_started_event": in_started_event(document, self.vm.get("name", "")),
                "last_success_at": utc_iso(self.last_success_at) if self.last_success_at is not None else None}
        if record is not None:
            push["record"] = record
        return push


# ---------------------------------------------------------------------------------------- signing

KEY_CONTEXT = b"relay-key:"
MAX_STAMP_DIGITS = 12


def relay_key(secret, host):
    # type: (Any, str) -> bytes
    """The key the relay of `host` signs its pushes with: HMAC-SHA256(secret, "relay-key:" + host), in hex.
    The controller keeps the shared secret and derives each host's key; a VM holds only its own, so that it
    can sign pushes for itself and for no other VM. The secret is taken as the token file is read (UTF-8,
    surrounding whitespace stripped)."""
    if not isinstance(secret, bytes):
        secret = str(secret).encode("utf-8")
    digest = hmac.new(secret.strip(), KEY_CONTEXT + str(host).encode("utf-8"), hashlib.sha256).hexdigest()
    return digest.encode("ascii")


def sign(body, key, at):
    # type: (bytes, bytes, float) -> str
    """The signature header's value: the time and an HMAC-SHA256 of "<time>.<body>"."""
    stamp = "%d" % int(at)
    digest = hmac.new(key, stamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return "t=%s,v1=%s" % (stamp, digest)


def _signature(header):
    # type: (Optional[str]) -> Any
    """The header's (stamp, signature as bytes); PushError (401) when it is missing or not t=<seconds>,v1=<hex>."""
    if not header:
        raise PushError("the push carries no %s header." % SIGNATURE_HEADER, 401)
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp, given = parts.get("t", ""), parts.get("v1", "")
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= MAX_STAMP_DIGITS) or not given:
        raise PushError("the push's %s header is not t=<seconds>,v1=<hex>." % SIGNATURE_HEADER, 401)
    # compared as bytes: a header with other than ASCII in it is a mismatch, never an error
    return stamp, given.encode("utf-8", "replace")


def _signs(body, stamp, given, key):
    # type: (bytes, str, bytes, bytes) -> bool
    expected = hmac.new(key, stamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest().encode("ascii")
    return hmac.compare_digest(expected, given)


def _fresh(stamp, now, max_skew):
    if abs(now - int(stamp)) > max_skew:
        raise PushError("the push was signed %d s away from now (more than %d s: a replay, or a clock that is off)."
                        % (abs(now - int(stamp)), max_skew), 401)


def verify(body, header, key, now, max_skew=MAX_CLOCK_SKEW_SECONDS):
    # type: (bytes, Optional[str], bytes, float, float) -> None
    """Raise PushError unless `header` signs `body` with `key` at a time within `max_skew` of `now`."""
    stamp, given = _signature(header)
    if not _signs(body, stamp, given, key):
        raise PushError("the push's signature does not match its body (wrong key, or the body was changed).", 401)
    _fresh(stamp, now, max_skew)


def check_push(body, header, secret, now, max_skew=MAX_CLOCK_SKEW_SECONDS):
    # type: (bytes, Optional[str], bytes, float, float) -> Dict[str, Any]
    """The push, checked: signed with the key of the host it names (relay_key(secret, host)), within
    `max_skew` of `now`, and well formed. PushError in one sentence otherwise: 401 for the signature, 400
    for a malformed body. A push signed with the shared secret itself (a relay installed before per-host
    keys) is refused with a sentence that says so."""
    stamp, given = _signature(header)
    push = parse_push(body)
    if not _signs(body, stamp, given, relay_key(secret, push["host"])):
        if _signs(body, stamp, given, secret.strip()):
            raise PushError("the push for %s is signed with the controller's shared secret, not with the host's own "
                            "key: its relay was installed before per-host keys; run the event_relay role on it again."
                            % push["host"], 401)
        raise PushError("the push's signature does not match its body with the key of %s (a relay signing for "
                        "another host, a wrong key, or a changed body)." % push["host"], 401)
    _fresh(stamp, now, max_skew)
    return push


def parse_push(body):
    # type: (bytes) -> Dict[str, Any]
    """The push, checked for shape; raises PushError in one sentence."""
    if len(body) > MAX_PUSH_BYTES:
        raise PushError("the push is larger than %d bytes." % MAX_PUSH_BYTES)
    try:
        push = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise PushError("the push is not UTF-8 JSON.")
    if not isinstance(push, dict) or push.get("version") != PUSH_VERSION:
        raise PushError("the push is not a version %d relay push." % PUSH_VERSION)
    if push.get("kind") not in (CHANGE, HEARTBEAT):
        raise PushError("the push's kind is %r, not change or heartbeat." % (push.get("kind"),))
    for name in ("host", "relay_id"):
        if not isinstance(push.get(name), str) or not push[name]:
            raise PushError("the push names no %s." % name)
    if not HOST_NAME.fullmatch(push["host"]):
        raise PushError("the push's host %r is not an inventory hostname." % push["host"][:100])
    if not isinstance(push.get("seq"), int) or isinstance(push.get("seq"), bool) or push["seq"] < 1:
        raise PushError("the push's seq is not a positive integer.")
    if not isinstance(push.get("quiet"), bool):
        raise PushError("the push does not say whether the VM is quiet.")
    return push


# ---------------------------------------------------------------------------------------- logging

class LogLimiter:
    """Log lines of one kind (IMDS failing, a refused push from one sender, a full disk) rate-limited: the first
    at once, then at most one a `period`, saying how many were held back, so that a failure that lasts days
    neither floods the journal nor goes unsaid. Times are the caller's clock's seconds."""

    def __init__(self, period=60.0):
        # type: (float) -> None
        self.period = period
        self.kinds = {}   # type: Dict[Any, List[float]]   # kind -> [last line at, held back since]

    def note(self, kind, now):
        # type: (Any, float) -> Optional[int]
        """None: hold this one back; otherwise log it, with the returned number held back since the last line."""
        for old in [k for k, (at, held) in self.kinds.items() if not held and now - at >= self.period]:
            del self.kinds[old]   # bounded: kinds quiet for a period are forgotten
        entry = self.kinds.get(kind)
        if entry is None or not 0 <= now - entry[0] < self.period:
            held = int(entry[1]) if entry else 0
            self.kinds[kind] = [now, 0]
            return held
        entry[1] += 1
        return None


def held_back(count):
    # type: (int) -> str
    """The suffix of a rate-limited line."""
    return "" if not count else " (%d more like it since the last line)" % count


# ---------------------------------------------------------------------------------------- the spool

def spool_overflow(seqs, max_entries):
    # type: (List[int], int) -> List[int]
    """Which spooled pushes to drop when the spool is over `max_entries`: the oldest ones. The newest push
    always stays, and it carries the latest document, which is all a trigger needs; the full history
    stays in the VM's own history file."""
    ordered = sorted(seqs)
    return ordered[:max(0, len(ordered) - max(1, max_entries))]
