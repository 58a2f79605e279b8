# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state store: everything the controller keeps between runs, in one place every controller can name.

What the controller keeps: the write-ahead state of each host read through the control plane (`STATE`), the lease
lock of the run working on it (`LOCK`), and the memory of the target's VMs (`MEMORY`, plugin_utils/vm_memory.py).
An AWX job starts with a fresh home and two controllers (the Event Grid rulebook beside the scheduled cycle, two AWX
nodes) each have their own: kept in files under the home, all of it is lost between jobs or kept twice. So each is a
text under a key (`<host>/<file name>` for a state or a lock, the target for the memory), in a store the role names
by one URL (url.py): files (files.py), SQLite or PostgreSQL (sql.py).

The texts are the ones the files held, judged by the same pure code (cycle_lock, cycle_state, vm_memory): a store
only reads, writes, and runs `change` on a text under an exclusive guard, so that "read, judge, write" is one step
for every controller that names the store.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import DELETE

STATE, LOCK, MEMORY = "state", "lock", "memory"
KINDS = (STATE, LOCK, MEMORY)

__all__ = ["DELETE", "KINDS", "LOCK", "MEMORY", "STATE", "Store", "StoreError"]


class StoreError(OSError):
    """The store cannot be reached or used; the message names it and the cause. An OSError, so that the tasks that
    met a file they could not use (a lock, a state) meet it the same way: the host counts as busy (unread)."""


class Store:
    """Texts by kind and key. `where(kind, key)` is what a message names (a file's path, a row of a database)."""

    def where(self, kind: str, key: str) -> str:
        raise NotImplementedError

    def read(self, kind: str, key: str) -> Optional[str]:
        """The text, None when there is none; raises StoreError (a file store: StateUnreadable for a state that is
        no text)."""
        raise NotImplementedError

    def write(self, kind: str, key: str, text: str) -> None:
        """Replace the text in one step; raises StoreError."""
        raise NotImplementedError

    def update(self, kind: str, key: str, change: Callable[[Optional[str]], Any], write: bool = True) -> Any:
        """change(text or None) under an exclusive guard on the key, then keep what it returns (DELETE: remove the
        text, None: leave it); returns change's answer. With write false only read. Raises StoreError."""
        raise NotImplementedError
