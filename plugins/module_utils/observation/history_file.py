# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a history file is appended to: by the scheduled_events_history callback on the controller and by
the relay on a VM (docs/guide/history.md).

Whole lines, with one write each, under an exclusive flock on the file (concurrent runs share one history),
waited for at most `lock_timeout` seconds. A line torn by a killed writer is ended before the next record, so it
stays one bad line, not two. On a file system without flock the file is written without a lock, and
`unlocked_warning` says so once. With `max_bytes`, a file that would grow beyond it is first moved aside whole to
`<path>.1` (the previous one is replaced), so a VM's history stays bounded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import os
import time

LOCK_TIMEOUT_S = 10.0
NO_FLOCK_ERRNOS = frozenset(code for code in (getattr(errno, name, None) for name in ("ENOLCK", "EOPNOTSUPP", "ENOTSUP", "EINVAL"))
                            if code is not None)


class NoFlock(Exception):
    """The file system refuses flock (the message is its reason)."""


def flock_within(fd, timeout):
    """Take an exclusive flock on `fd`, waiting up to `timeout` seconds (TimeoutError then); NoFlock on a file
    system without flock."""
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError(errno.ETIMEDOUT, "another writer held the lock for more than %g s" % timeout)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        except OSError as exc:
            if exc.errno not in NO_FLOCK_ERRNOS:
                raise
            raise NoFlock(exc.strerror or str(exc))


class HistoryFile:
    """Appends whole lines to one file, safely against concurrent writers and torn last lines."""

    def __init__(self, path, lock_timeout=LOCK_TIMEOUT_S, max_bytes=0):
        self.path = path
        self.lock_timeout = lock_timeout
        self.max_bytes = max_bytes      # 0: unbounded
        self.unlocked_warning = None    # set once when the file system refused flock

    def append(self, data):
        """Append `data` (bytes of whole lines); raises OSError (TimeoutError when the lock stays held)."""
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                locked = self._lock(fd)
                try:
                    size = os.fstat(fd).st_size
                    if self.max_bytes and size and size + len(data) > self.max_bytes:
                        os.replace(self.path, self.path + ".1")
                        continue  # this file is aside, whole: append to a new one
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        data = b"\n" + data  # end the torn line a killed writer left
                    view = memoryview(data)
                    while view:  # one write of the full bytes; the loop only covers a short write
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                    return
                finally:
                    if locked:
                        fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _lock(self, fd):
        """Take the exclusive lock, waiting up to lock_timeout; False when the file system has no flock."""
        try:
            flock_within(fd, self.lock_timeout)
            return True
        except NoFlock as exc:
            self.unlocked_warning = "the file system does not support flock (%s), so it is written to without a lock" % (
                exc.args[0])
            return False
