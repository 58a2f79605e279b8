# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VM side of the lease lock (see cycle_lock): one check-and-write under an exclusive guard."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import os
import tempfile
import time

# What a change asks the guard to do with the file: delete it (cycle_lock's release answers it). Here, not in
# cycle_lock, so that the relay, which writes its files with replace_file, carries no lock rules it never runs.
DELETE = object()
GUARD_TIMEOUT = 30.0
POLL_SECONDS = 0.05


class GuardBusy(OSError):
    """Another process kept the guard longer than the wait allowed; the message names the file and the wait."""


def update_under_guard(path, change, timeout=GUARD_TIMEOUT, clock=time.monotonic, sleep=time.sleep, write=True):
    """Call change(text of `path` or None) holding an exclusive flock on `path`.guard, then write what it
    returns (atomically), delete the file on DELETE, or leave it on None. Returns change's answer.
    With write=False (check mode) only read: no folder, no guard file (writes are atomic, so a read
    without the guard still sees a whole lock).

    The guard makes "read, judge, write" one step between runs on this VM, so two runs can never both
    take a free or expired lock. Nobody holds it for more than a file read and write, so a guard still
    held after `timeout` seconds means a stuck process: raises GuardBusy then (an OSError), and OSError
    for any other failure."""
    if not write:
        return change(read_text(path))
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, 0o700, exist_ok=True)
    with open(path + ".guard", "a") as guard:
        _acquire(guard, path + ".guard", timeout, clock, sleep)
        try:
            text = read_text(path)
            answer = change(text)
            if answer is DELETE:
                os.unlink(path)
            elif answer is not None:
                replace_file(path, answer)
            return answer
        finally:
            fcntl.flock(guard.fileno(), fcntl.LOCK_UN)


def _acquire(guard, name, timeout, clock, sleep):
    """flock LOCK_EX, polling without blocking: a blocking flock would hang this run, and every later
    one, behind a stuck holder."""
    deadline = clock() + timeout
    while True:
        try:
            fcntl.flock(guard.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass  # held by another process
        if clock() >= deadline:
            # No trailing period: callers put this sentence in parentheses inside their own.
            raise GuardBusy("another process has held %s for more than %g s; find it with fuser -v %s and end it, "
                            "or try again later" % (name, timeout, name))
        sleep(POLL_SECONDS)


def read_text(path):
    """The file's text (undecodable bytes replaced), or None when there is no file."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def replace_file(path, text, prefix=".lock-", mode=None):
    """Write `text` to `path` in one step (a temporary file, mode 0600 unless `mode` says otherwise, then a
    rename): a reader sees the old content or the new one, never half of it, even if this process is killed."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=prefix)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
