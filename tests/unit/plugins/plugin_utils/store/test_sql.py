"""The SQLite store (plugin_utils/store/sql.py) on a real SQLite file: one table per kind, a lock row naming its
owner and lease, each change one step between controllers, a database that cannot be reached or used an error the
tasks count as busy. The same code against a real PostgreSQL server: tests/integration/test_postgresql_store.py."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.sql import (
    TABLE_PREFIX,
    without_password,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    LOCK,
    MEMORY,
    STATE,
    Store,
    StoreError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import open_store
from tests.unit.plugins.plugin_utils.store.test_interface import NOW, count_at_once


def test_a_sqlite_store_is_one_table_per_kind_and_a_lock_row_names_its_owner_and_lease(tmp_path: Path) -> None:
    store = open_store("sqlite://%s/state.db" % tmp_path)
    store.update(LOCK, "web0/state.json.lock", lambda text: lock_text("run 1", NOW, 60))
    with sqlite3.connect(str(tmp_path / "state.db")) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        row = db.execute("SELECT key, owner, expires_at FROM %slock" % TABLE_PREFIX).fetchone()
    assert tables == {TABLE_PREFIX + kind for kind in (STATE, LOCK, MEMORY)}
    assert row == ("web0/state.json.lock", "run 1", "2026-11-29T12:01:00Z")
    assert (tmp_path / "state.db").stat().st_mode & 0o077 == 0, "it names the VMs and what is owed on them"


def test_two_controllers_changing_one_sqlite_key_at_once_lose_no_change(tmp_path: Path) -> None:
    """BEGIN IMMEDIATE: each read-judge-write is one step, so no controller writes over a change it did not see."""
    assert count_at_once("sqlite://%s/state.db" % tmp_path, 3, 15) == ([], "45")


@pytest.mark.parametrize("use", [lambda s: s.read(STATE, "k"), lambda s: s.write(MEMORY, "k", "t"),
                                 lambda s: s.update(LOCK, "k", lambda text: "t")])
def test_a_sqlite_store_that_cannot_be_reached_raises_one_sentence_naming_it(
        tmp_path: Path, use: Callable[[Store], object]) -> None:
    (tmp_path / "file").write_text("")  # a file where the database's folder should be
    with pytest.raises(StoreError, match=r"^cannot reach the state store sqlite://%s/file/state\.db \(" % tmp_path):
        use(open_store("sqlite://%s/file/state.db" % tmp_path))


def test_a_database_that_is_no_sqlite_file_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    (tmp_path / "state.db").write_text("not a database " * 100)
    with pytest.raises(StoreError, match="cannot use the state store"):
        open_store("sqlite://%s/state.db" % tmp_path).read(STATE, "web0/state.json")


def test_a_password_never_appears_in_what_a_message_names() -> None:
    assert without_password("postgresql://se:s3cret@db:5432/se") == "postgresql://se:***@db:5432/se"
    assert without_password("postgresql://db/se") == "postgresql://db/se"
