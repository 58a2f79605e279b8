# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which store a URL names (maintenance_cycle_state_store), and the one rule about where a store may be: pure.

- `file:` (the default): the files where maintenance_cycle_control_plane_state_dir and maintenance_cycle_vm_memory
  name them (under ~/.ansible/azure_imds_scheduled_events unless set);
- `file:/dir` or a plain path `/dir`: the same files under /dir (control_plane/<host>/, vms-<target>.json);
- `sqlite:///path/to/file.db` (after `sqlite://`, the path: `sqlite://~/x.db` is under the home);
- `postgresql://...` or `postgres://...`: a libpq URL.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.files import FileStore
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.sql import (
    postgresql_store,
    sqlite_store,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import Store

FILE, SQLITE, POSTGRESQL = "file", "sqlite", "postgresql"
FIX = ("set maintenance_cycle_state_store to a PostgreSQL URL (postgresql://...) or to a persistent path (file:/dir "
       "or sqlite:///dir/state.db on a volume every job mounts)")


class StoreUrlError(ValueError):
    """A URL that names no store; one sentence."""


@dataclass(frozen=True)
class StoreUrl:
    kind: str
    location: str  # the folder (file; "" for the role's own paths), the database file (sqlite), the URL (postgresql)


def parse_store_url(url: str) -> StoreUrl:
    url = str(url or "").strip()
    if url in ("", "file:"):
        return StoreUrl(FILE, "")
    if url.startswith("file:"):
        return StoreUrl(FILE, re.sub(r"^file:(//)?", "", url))
    if url.startswith("sqlite://"):
        path = url[len("sqlite://"):]
        if path.strip("/") == "":
            raise StoreUrlError("maintenance_cycle_state_store %s names no database file; give its path, as in "
                                "sqlite:///var/lib/azure_imds/state.db." % url)
        return StoreUrl(SQLITE, path)
    if url.startswith(("postgresql://", "postgres://")):
        return StoreUrl(POSTGRESQL, url)
    if url.startswith(("/", "~")):
        return StoreUrl(FILE, url)
    raise StoreUrlError("maintenance_cycle_state_store %r is no store this collection knows; give file:, a path, "
                        "sqlite:///path/to/file.db or postgresql://user@host/database." % url)


def store_paths(store: StoreUrl, state_dir: str, memory_path: str) -> List[str]:
    """Where a file or SQLite store keeps its texts on this control node; [] for PostgreSQL. `memory_path` ""
    (the memory off) keeps none."""
    if store.kind == SQLITE:
        return [store.location]
    if store.kind != FILE:
        return []
    if store.location:
        return [store.location]
    return [path for path in (state_dir, memory_path) if path]


def file_memory_path(store: StoreUrl, target: str, memory_path: str) -> str:
    """The memory file of `target` in a file store: the role's path, or vms-<target>.json in the store's folder."""
    if not store.location:
        return memory_path
    return os.path.join(store.location, "vms-%s.json" % re.sub(r"[^A-Za-z0-9_.-]+", "_", str(target)))


def open_store(url: str, state_dir: str = "", memory_path: Callable[[str], str] = lambda target: "") -> Store:
    """The store `url` names; for `file:` alone, the files at `state_dir` and `memory_path(target)`. Raises
    StoreUrlError, or StoreError (a PostgreSQL store without its driver)."""
    store = parse_store_url(url)
    if store.kind == SQLITE:
        return sqlite_store(store.location)
    if store.kind == POSTGRESQL:
        return postgresql_store(store.location)
    if store.location:
        return FileStore(os.path.join(store.location, "control_plane"),
                         lambda target: file_memory_path(store, target, ""))
    return FileStore(state_dir, memory_path)


def awx_refusal(url: str, job_id: Optional[str], home: str, state_dir: str, memory_path: str) -> str:
    """The sentence that stops an AWX (or Automation Controller) job whose store is under the home, "" otherwise.
    Each job starts with a fresh home: what one job kept there (a recover owed, a fault domain held, a set split over
    runs) is gone for the next, which then approves beside a drained VM."""
    if job_id in (None, ""):
        return ""
    try:
        store = parse_store_url(url)
    except StoreUrlError as exc:
        return str(exc)
    home = os.path.normpath(os.path.expanduser(home))
    paths = [os.path.normpath(os.path.expanduser(path)) for path in store_paths(store, state_dir, memory_path)]
    inside = [path for path in paths if _under(path, home)]
    if not inside:
        return ""
    return ("This run is AWX job %s and keeps its state store under the job's home (%s), which the next job will "
            "not see, so a recover owed or a fault domain held would be forgotten: %s." % (job_id, ", ".join(inside),
                                                                                           FIX))


def _under(path: str, home: str) -> bool:
    return path == home or path.startswith(home.rstrip("/") + "/")
