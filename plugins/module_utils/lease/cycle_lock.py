# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease lock a maintenance run holds on each VM it works on: pure functions, no I/O.

Two runs must never work on one VM at once (AWX without allow_simultaneous, a cron
overlap, two controllers): both could prepare, approve, or save the state. The lock
is a small JSON file next to the state file naming its owner (one id per run) and
when its lease ends. Each function takes the lock file's current text (None: no
file) and says what to write; the caller does that under an exclusive guard, so a
check and its write are one step.

- claim: take a free or expired lock, or renew one's own; another run's live lock
  is *not* an error: the caller leaves that VM alone for this run;
- refresh: renew one's own lock before an irreversible step (approval); a lock
  that is gone or changed hands means this run must not go on;
- release: delete one's own lock, never another run's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from datetime import datetime, timedelta, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import DELETE

MAX_LEASE_SECONDS = 86400.0


class LockError(ValueError):
    """This run cannot go on with the lock; one sentence."""


def check_lock_request(owner, lease_seconds):
    """Raise LockError for an owner or lease the lock cannot work with."""
    if not isinstance(owner, str) or not owner.strip():
        raise LockError("lock_owner must be a non-empty name of this run.")
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, (int, float)) \
            or not 0 < lease_seconds <= MAX_LEASE_SECONDS:
        raise LockError("lock_seconds must be more than 0 and at most %d." % MAX_LEASE_SECONDS)


def _iso(moment):
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def lock_text(owner, now, lease_seconds):
    """The lock file's content for `owner` from `now` (an aware datetime)."""
    record = {"owner": owner, "acquired_at": _iso(now), "expires_at": _iso(now + timedelta(seconds=lease_seconds))}
    return json.dumps(record, sort_keys=True) + "\n"


def parse_lock(text):
    """The lock record, or None when `text` is not one (an unreadable lock counts as no lock)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("owner"), str) or not data["owner"].strip():
        return None
    try:
        data["expires"] = datetime.strptime(data.get("expires_at"), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return None
    return data


def _public(holder):
    return dict((k, v) for k, v in holder.items() if k != "expires")


def claim(text, owner, now, lease_seconds, path):
    """(text to write or None, outcome): outcome has taken, held_by (another run's live lock) and note."""
    holder = None if text is None else parse_lock(text)
    note = None
    if text is not None and holder is None:
        note = "the lock file %s was unreadable; it is replaced." % path
    elif holder is not None and holder["owner"] != owner:
        if holder["expires"] > now:
            return None, {"taken": False, "held_by": _public(holder), "note": held_message(holder, path)}
        note = "took over the expired lock %s of %s (its lease ended %s)." % (
            path, holder["owner"], holder["expires_at"])
    return lock_text(owner, now, lease_seconds), {"taken": True, "held_by": None, "note": note}


def held_message(holder, path):
    return ("another maintenance run holds this VM (%s, since %s, until %s): this run leaves it alone; if that run "
            "is gone, delete %s or wait for its lease to end." % (holder["owner"], holder.get("acquired_at", "?"),
                                                                  holder["expires_at"], path))


def refresh(text, owner, now, lease_seconds, path):
    """The renewed lock text; LockError when this run no longer holds the lock."""
    holder = None if text is None else parse_lock(text)
    if holder is None:
        # The usual cause: two hosts of one run given the same state path share this lock, and the first to finish
        # released it under the other (whose saved events it also shares).
        raise LockError("this run's lock %s is gone, so it may no longer hold this VM and nothing was done: most "
                        "likely another host of this run shares this VM's state path and released it, so give each "
                        "host its own maintenance_cycle_state_path (the default is one per machine)." % path)
    if holder["owner"] != owner:
        raise LockError("this run's lock %s is now held by %s (its lease ended), so nothing was done." % (
            path, holder["owner"]))
    return lock_text(owner, now, lease_seconds)


def release(text, owner):
    """DELETE when the lock is this run's, else None (another run's lock, or none, stays as it is)."""
    holder = None if text is None else parse_lock(text)
    return DELETE if holder is not None and holder["owner"] == owner else None
