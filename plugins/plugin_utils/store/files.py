# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file store: the texts as files on this control node, where the collection has always kept them.

Right for one control node whose home lasts (cron, a rulebook on one machine); an AWX job's home does not last
(url.awx_refusal). A state or a lock is <state_dir>/<key> (<host>/state.json, <host>/state.json.lock), the
memory is the file `memory_path(target)` names. Each change runs under an exclusive flock (lease/lock_file.py).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LocalFiles
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import read_text
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    MEMORY,
    STATE,
    Store,
    StoreError,
)


class FileStore(Store):
    def __init__(self, state_dir: str, memory_path: Callable[[str], str]):
        self.state_dir, self.memory_path = state_dir, memory_path
        self.files = LocalFiles()

    def where(self, kind: str, key: str) -> str:
        if kind == MEMORY:
            return os.path.abspath(os.path.expanduser(self.memory_path(key)))
        return os.path.join(os.path.expanduser(self.state_dir), key)

    def read(self, kind: str, key: str) -> Optional[str]:
        path = self.where(kind, key)
        if kind == STATE:
            return self.files.read_state(path)  # StateUnreadable for a file that is no text: the state is damaged
        try:
            return read_text(path)
        except OSError as exc:
            raise StoreError("cannot read %s (%s)" % (path, exc))

    def write(self, kind: str, key: str, text: str) -> None:
        self.files.write_state(self.where(kind, key), text)

    def update(self, kind: str, key: str, change: Callable[[Optional[str]], Any], write: bool = True) -> Any:
        return self.files.update_lock(self.where(kind, key), change, write=write)
