# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The database stores: SQLite (the standard library; two controllers on one machine) and PostgreSQL (psycopg;
where AWX or EDA controller already run one, so that every job and every controller share it).

One table per kind, keyed by host file (<host>/state.json) or target, the text as the file held it. A lock row also
carries its owner and lease expiry (from the text, which cycle_lock still judges), for a person reading the table.
Every change is one transaction that holds the key exclusively while `change` judges the text: SQLite's
BEGIN IMMEDIATE (one writer at a time), PostgreSQL's transaction-scoped advisory lock on the key (it holds a key whose
row does not exist yet, where SELECT ... FOR UPDATE has nothing to lock) and then the row FOR UPDATE. A connection per
call: the action plugins run in forked workers, and a store is asked a few times per host and run.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Optional, Tuple
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import parse_lock
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.interface import (
    DELETE,
    KINDS,
    LOCK,
    Store,
    StoreError,
)

TABLE_PREFIX = "azure_imds_scheduled_events_"
WAIT_SECONDS = 30  # how long a change waits for another controller's: each holds a key for one judgement


@dataclass(frozen=True)
class Dialect:
    placeholder: str  # DB-API paramstyle: qmark or format
    begin: str  # the transaction that takes the write guard at once
    guard: str  # a statement holding the key until the transaction ends, or "" (SQLite's BEGIN IMMEDIATE already does)
    for_update: str  # what locks the row read inside the transaction


SQLITE = Dialect("?", "BEGIN IMMEDIATE", "", "")
POSTGRESQL = Dialect("%s", "BEGIN", "SELECT pg_advisory_xact_lock(hashtext(%s))", " FOR UPDATE")


def table(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError("no such kind of text in the store: %r" % kind)
    return TABLE_PREFIX + kind


def schema() -> Tuple[str, ...]:
    """The same tables in both databases (TEXT is PostgreSQL's too)."""
    return tuple("CREATE TABLE IF NOT EXISTS %s (key TEXT PRIMARY KEY, text TEXT NOT NULL, owner TEXT, "
                 "expires_at TEXT, updated_at TEXT NOT NULL)" % table(kind) for kind in KINDS)


def row_of(kind: str, text: str, now: datetime) -> Dict[str, Optional[str]]:
    """The columns besides key and text: a lock's owner and lease expiry as its text says (None if it says none)."""
    lock = parse_lock(text) if kind == LOCK else None
    return {"owner": lock["owner"] if lock else None, "expires_at": lock.get("expires_at") if lock else None,
            "updated_at": now.isoformat()}


class SqlStore(Store):
    """`connect()` gives a DB-API connection in autocommit mode (transactions are begun here); `name` is the URL
    without its password, for messages."""

    def __init__(self, name: str, connect: Callable[[], Any], dialect: Dialect, errors: Tuple[type, ...]):
        self.name, self.connect, self.dialect, self.errors = name, connect, dialect, errors
        self.cursor: Any = None  # while a change runs: its transaction, which a change inside it joins

    def where(self, kind: str, key: str) -> str:
        return "%s, table %s, key %s" % (self.name, table(kind), key)

    def read(self, kind: str, key: str) -> Optional[str]:
        return self.update(kind, key, lambda text: text, write=False)

    def write(self, kind: str, key: str, text: str) -> None:
        self.update(kind, key, lambda _old: text)

    def update(self, kind: str, key: str, change: Callable[[Optional[str]], Any], write: bool = True) -> Any:
        """A change asked for inside another (a state saved under its lock's guard) joins its transaction: both
        are kept, or neither, and a second connection would wait on the first for ever."""
        if self.cursor is not None:
            return self._change(self.cursor, kind, key, change, write)
        try:
            connection = self.connect()
        except self.errors as exc:
            raise StoreError("cannot reach the state store %s (%s)" % (self.name, _one_line(exc)))
        try:
            return self._transaction(connection.cursor(), kind, key, change, write)
        except self.errors as exc:
            raise StoreError("cannot use the state store %s (%s)" % (self.where(kind, key), _one_line(exc)))
        finally:
            self.cursor = None
            connection.close()

    def _transaction(self, cursor: Any, kind: str, key: str, change: Callable[[Optional[str]], Any],
                     write: bool) -> Any:
        self._create_tables(cursor)
        cursor.execute(self.dialect.begin)
        self.cursor = cursor
        try:
            answer = self._change(cursor, kind, key, change, write)
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        cursor.execute("COMMIT")
        return answer

    def _change(self, cursor: Any, kind: str, key: str, change: Callable[[Optional[str]], Any], write: bool) -> Any:
        if self.dialect.guard:
            cursor.execute(self.dialect.guard, ("%s/%s" % (table(kind), key),))
        cursor.execute(self.sql("SELECT text FROM %s WHERE key = ?%s" % (table(kind), self.dialect.for_update)),
                       (key,))
        row = cursor.fetchone()
        answer = change(row[0] if row else None)
        if write and answer is DELETE:
            cursor.execute(self.sql("DELETE FROM %s WHERE key = ?" % table(kind)), (key,))
        elif write and answer is not None:
            self._upsert(cursor, kind, key, answer)
        return answer

    def _create_tables(self, cursor: Any) -> None:
        """Once per connection; under the write guard, since PostgreSQL's CREATE TABLE IF NOT EXISTS can still
        collide with another controller's."""
        cursor.execute(self.dialect.begin)
        if self.dialect.guard:
            cursor.execute(self.dialect.guard, (TABLE_PREFIX,))
        for statement in schema():
            cursor.execute(statement)
        cursor.execute("COMMIT")

    def _upsert(self, cursor: Any, kind: str, key: str, text: str) -> None:
        row = row_of(kind, text, datetime.now(timezone.utc))
        cursor.execute(self.sql("INSERT INTO %s (key, text, owner, expires_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                                "ON CONFLICT (key) DO UPDATE SET text = excluded.text, owner = excluded.owner, "
                                "expires_at = excluded.expires_at, updated_at = excluded.updated_at" % table(kind)),
                       (key, text, row["owner"], row["expires_at"], row["updated_at"]))

    def sql(self, statement: str) -> str:
        return statement.replace("?", self.dialect.placeholder)


def sqlite_store(path: str) -> SqlStore:
    """A SQLite file (its folder and the file created 0700/0600: it names the VMs and what is owed on them)."""
    path = os.path.abspath(os.path.expanduser(path))

    def connect() -> sqlite3.Connection:
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        return sqlite3.connect(path, timeout=WAIT_SECONDS, isolation_level=None)

    return SqlStore("sqlite://" + path, connect, SQLITE, (sqlite3.Error, OSError))


def postgresql_store(url: str) -> SqlStore:
    """A PostgreSQL database by its libpq URL (postgresql://user:password@host:port/database?sslmode=...)."""
    try:
        import psycopg  # only where a PostgreSQL store is named: the collection needs it nowhere else
    except ImportError:
        raise StoreError("the state store %s needs the Python package psycopg on the controller (pip install "
                         "'psycopg[binary]'; the execution environment's requirements have it)" % without_password(url))

    def connect() -> Any:
        connection = psycopg.connect(url, autocommit=True, connect_timeout=10)
        connection.execute("SET lock_timeout = '%ds'" % WAIT_SECONDS)
        return connection

    return SqlStore(without_password(url), connect, POSTGRESQL, (psycopg.Error, OSError))


def without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(":%s@" % parts.password, ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
