"""The controller's state store (plugin_utils/store/interface.py): every backend keeps the same texts (files, a real
SQLite file; a real PostgreSQL server in tests/integration/test_postgresql_store.py), and a change is all or nothing."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import claim
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    DELETE,
    LOCK,
    MEMORY,
    STATE,
    Store,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import open_store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(params=["file", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "file":
        return open_store("file:%s" % tmp_path)
    return open_store("sqlite://%s/state.db" % tmp_path)


def exercise(store: Store) -> None:
    """What every backend must do, with the texts the collection keeps."""
    assert store.read(STATE, "web0/state.json") is None, "nothing kept yet: a first cycle"
    store.write(STATE, "web0/state.json", '{"version": 1}\n')
    assert store.read(STATE, "web0/state.json") == '{"version": 1}\n'
    assert store.read(STATE, "web1/state.json") is None, "keyed by host"
    taken = store.update(LOCK, "web0/state.json.lock", lambda text: claim(text, "run 1", NOW, 60, "x")[0])
    assert json.loads(taken)["owner"] == "run 1" and store.read(LOCK, "web0/state.json.lock") == taken
    assert store.update(LOCK, "web0/state.json.lock", lambda text: None) is None
    assert store.read(LOCK, "web0/state.json.lock") == taken, "None leaves the text as it is"
    assert store.update(LOCK, "web0/state.json.lock", lambda text: "x", write=False) == "x"
    assert store.read(LOCK, "web0/state.json.lock") == taken, "check mode writes nothing"
    store.update(LOCK, "web0/state.json.lock", lambda text: DELETE)
    assert store.read(LOCK, "web0/state.json.lock") is None
    store.update(MEMORY, "azure_vms", lambda text: (text or "") + "a")
    assert store.read(MEMORY, "azure_vms") == "a" and store.read(MEMORY, "db") is None


def count_at_once(url: str, controllers: int, each: int) -> Tuple[List[BaseException], Optional[str]]:
    """`controllers` threads, each with its own store (its own connections, as another controller's), adding one to
    the same key `each` times at once: what failed, and the count kept."""
    errors: List[BaseException] = []

    def add_ones() -> None:
        store = open_store(url)
        try:
            for _round in range(each):
                store.update(STATE, "web0/state.json", lambda text: str(int(text or "0") + 1))
        except BaseException as exc:  # pragma: no cover - shown by the caller's assert
            errors.append(exc)

    threads = [threading.Thread(target=add_ones) for _controller in range(controllers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors, open_store(url).read(STATE, "web0/state.json")


def test_every_store_keeps_reads_replaces_and_deletes_the_same_texts(store: Store) -> None:
    exercise(store)


def test_a_change_that_fails_changes_nothing(tmp_path: Path) -> None:
    store = open_store("sqlite://%s/state.db" % tmp_path)
    store.write(STATE, "web0/state.json", "before")

    def failing(text: Optional[str]) -> str:
        raise ValueError("judged: no")

    with pytest.raises(ValueError):
        store.update(STATE, "web0/state.json", failing)
    assert store.read(STATE, "web0/state.json") == "before"
    store.write(STATE, "web0/state.json", "after")  # and the key is not left guarded
    assert store.read(STATE, "web0/state.json") == "after"


def test_a_state_saved_under_its_locks_guard_joins_the_locks_transaction(tmp_path: Path) -> None:
    """state_file.saved_under_lock and the approval's write-ahead write the state inside the lock's change: a
    second transaction there would wait on the first (SQLite: "database is locked")."""
    store = open_store("sqlite://%s/state.db" % tmp_path)

    def renew_and_save(text: Optional[str]) -> str:
        store.write(STATE, "web0/state.json", "saved")
        assert store.read(STATE, "web0/state.json") == "saved"
        return "renewed"

    assert store.update(LOCK, "web0/state.json.lock", renew_and_save) == "renewed"
    assert store.read(STATE, "web0/state.json") == "saved" and store.read(LOCK, "web0/state.json.lock") == "renewed"

    def save_then_fail(text: Optional[str]) -> str:
        store.write(STATE, "web0/state.json", "half")
        raise ValueError("the lock changed hands")

    with pytest.raises(ValueError):
        store.update(LOCK, "web0/state.json.lock", save_then_fail)
    assert store.read(STATE, "web0/state.json") == "saved", "neither is kept"
