"""The PostgreSQL store (plugin_utils/store/sql.py) against a real PostgreSQL server, in the pytest job rather than
under ansible-test units, whose environments hold no server (tests/postgres_server.py): the same texts as every
store, each change one step between controllers (two connections at once lose no change), a lock row naming its
owner and lease, and a server that cannot be reached an error the tasks count as busy."""
from __future__ import annotations

from typing import Iterator

import psycopg
import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.sql import TABLE_PREFIX
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    LOCK,
    STATE,
    StoreError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import open_store
from tests.postgres_server import postgresql_server
from tests.unit.plugins.plugin_utils.store.test_interface import NOW, count_at_once, exercise


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from postgresql_server()


@pytest.fixture
def fresh(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as db:
        for kind in ("state", "lock", "memory"):
            db.execute("DROP TABLE IF EXISTS %s%s" % (TABLE_PREFIX, kind))
    return url


def test_a_postgresql_store_keeps_reads_replaces_and_deletes_the_same_texts(fresh: str) -> None:
    exercise(open_store(fresh))


def test_a_lock_row_names_its_owner_and_lease(fresh: str) -> None:
    open_store(fresh).update(LOCK, "web0/state.json.lock", lambda text: lock_text("run 1", NOW, 60))
    with psycopg.connect(fresh) as db:
        row = db.execute("SELECT key, owner, expires_at FROM %slock" % TABLE_PREFIX).fetchone()
    assert row == ("web0/state.json.lock", "run 1", "2026-11-29T12:01:00Z")


def test_two_controllers_changing_one_key_at_once_lose_no_change(fresh: str) -> None:
    """The key is held (an advisory lock, then the row) from the read to the write, also before its row exists."""
    assert count_at_once(fresh, 3, 10) == ([], "30")


def test_a_server_that_cannot_be_reached_is_one_sentence_without_the_password(tmp_path) -> None:
    store = open_store("postgresql://se:s3cret@/se?host=%s&connect_timeout=2" % tmp_path)
    with pytest.raises(StoreError, match=r"^cannot reach the state store postgresql://se:\*\*\*@/se") as raised:
        store.read(STATE, "web0/state.json")
    assert "s3cret" not in str(raised.value)
