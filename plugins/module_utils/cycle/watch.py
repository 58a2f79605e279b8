# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watch's bookkeeping (playbooks/watch.yml): its settings, and each host's book between rounds; pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import (
    PolicyError,
)

# playbooks/watch.yml runs a cycle per round on the hosts whose document changed. Each host keeps a "book"
# between rounds (plain data in a host fact); times are seconds since the epoch.

DEFAULT_WATCH = {"watch_seconds": 600.0, "round_seconds": 30.0, "poll_interval": 1.0, "unread_seconds": 900.0,
                 "quiet_seconds": 300.0, "stop_when_quiet": False}


def watch_settings(given):
    """The watch's settings, checked: positive numbers of seconds (quiet_seconds may be 0); PolicyError."""
    settings = dict(DEFAULT_WATCH)
    settings.update(dict((k, v) for k, v in (given or {}).items() if v is not None))
    unknown = set(settings) - set(DEFAULT_WATCH)
    if unknown:
        raise PolicyError("unknown watch setting %s." % sorted(unknown)[0])
    for name in DEFAULT_WATCH:
        if name == "stop_when_quiet":
            continue
        try:
            settings[name] = float(settings[name])
        except (TypeError, ValueError):
            settings[name] = float("nan")
        least_ok = name == "quiet_seconds"
        if not (settings[name] > 0 or (least_ok and settings[name] == 0)):
            variable = name if name.startswith("watch_") else "watch_" + name  # as the playbook names it
            raise PolicyError("%s must be a %s number of seconds, not %r." % (
                variable, "non-negative" if least_ok else "positive", (given or {}).get(name)))
    settings["stop_when_quiet"] = _truthy(settings["stop_when_quiet"])
    return settings


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def watch_start(settings, now):
    """A host's book when the watch begins: no document yet (the first round reads without waiting)."""
    return {"deadline": now + settings["watch_seconds"], "since": None, "read_at": now, "seen_events": False,
            "quiet_since": None}


def watch_wait_seconds(book, settings, now):
    """How long this round may wait for the document to change: a round, or what is left of the watch."""
    return max(0.0, min(settings["round_seconds"], book["deadline"] - now))


def watch_unread(book, settings, now):
    """(seconds since the host was last read, whether that is longer than the watch tolerates)."""
    seconds = now - book["read_at"]
    return seconds, seconds > settings["unread_seconds"]


def watch_after_round(book, result, now):
    """The book after a round that read `result` (the freshest read of the round: the cycle's own, if one ran).

    Quiet since when: no events left (a cycle that ran has recovered and saved by now). Walks pause between
    fault domains, so the watch stops only after a quiet stretch."""
    events = result.get("events") or []
    quiet_since = None if events else (book["quiet_since"] if book["quiet_since"] is not None else now)
    return dict(book, since=result.get("document_incarnation"), read_at=now,
                seen_events=bool(book["seen_events"] or events), quiet_since=quiet_since)


def watch_done(books, hosts_in_target, settings, now):
    """Whether the watch ends: its time is up, or (stop_when_quiet) every host of the target is in this round,
    some saw events, and all have been quiet for quiet_seconds. A host out of the round (unread or failed)
    may have work, so the watch is not quiet without it."""
    if not books:
        return False  # no host in the round: the next round (or the deadline) decides
    if now >= min(b["deadline"] for b in books):
        return True
    if not settings["stop_when_quiet"] or len(books) != hosts_in_target:
        return False
    if not any(b["seen_events"] for b in books) or any(b["quiet_since"] is None for b in books):
        return False
    return max(b["quiet_since"] for b in books) <= now - settings["quiet_seconds"]
