"""The store's own SQLite connections made safe, whatever the alias's OPTIONS say.

A host project keeps `startproject`'s DATABASES (no OPTIONS): deferred transactions, the rollback journal
and Python's 5 s busy timeout. Under a worker and a few concurrent starts that gives `database is locked`:
a deferred transaction that read first cannot take the write lock another connection holds, and a
rollback journal keeps readers out while anyone writes. So every connection a store thread opens (the
threads `mark_thread` marked, the pool's initializer; and, on the store's own database, the threads that
run flow steps, `mark_steps_thread`) gets, from `connection_created`:

- `PRAGMA journal_mode=WAL`: readers run beside the one writer (persistent: the file stays in WAL, so the
  host's own connections to it benefit too);
- `PRAGMA busy_timeout` of at least `BUSY_TIMEOUT` seconds (a longer OPTIONS `timeout` is kept);
- `transaction_mode = "IMMEDIATE"` on the thread's DatabaseWrapper: each transaction takes the write lock
  at BEGIN, so two writers never both read and then wait on each other's upgrade. Django's backend resets
  it from OPTIONS at each connect, hence the signal rather than a setting.

An in-memory database has no journal file to switch (it answers `memory`) and is left so. A file SQLite
cannot put in WAL (a read-only folder) is refused: at the store's construction when its folder cannot be
written, else at the first connection, with one line saying what to do.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from flowdeck.store import spi
from flowdeck.store.django import errors

__all__ = ["BUSY_TIMEOUT", "UnsafeSqlite", "check_folder", "mark_steps_thread", "mark_thread"]

BUSY_TIMEOUT = 30.0
"""Seconds a store connection waits for another connection's write lock before `database is locked`."""

_SAFE_JOURNALS = frozenset({"wal", "memory"})
_thread = threading.local()


class UnsafeSqlite(spi.FlowStoreError):
    """The SQLite database cannot be made safe for the store's concurrent writers."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


def mark_thread() -> None:
    """A store thread (the pool's initializer): its SQLite connections are made safe as they open."""
    _thread.store = True


def mark_steps_thread(using: str) -> None:
    """A thread that runs flow steps (the engine's body threads): its connections to the store's own
    database `using` are made safe as the store's are. A step that reads then writes in one
    `transaction.atomic()` under `startproject`'s deferred transactions meets `database is locked` at once
    whenever another connection wrote in between (no busy timeout helps; under load, on most retries);
    IMMEDIATE takes the write lock at BEGIN and waits its turn. Its connections to other databases are the
    host's business and left as configured."""
    _thread.steps_alias = using


def check_folder(using: str) -> None:
    """Refuse at construction a file database in a folder this process cannot write: WAL keeps its `-wal`
    and `-shm` files beside the database, so SQLite could not leave the rollback journal."""
    connection = connections[using]
    if connection.is_in_memory_db():  # type: ignore[attr-defined]
        return
    folder = Path(str(connection.settings_dict["NAME"])).resolve().parent
    if folder.is_dir() and not os.access(folder, os.W_OK):
        raise UnsafeSqlite(_refusal(using, f"its folder {folder} is not writable"))


def _made_safe(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor != "sqlite" or not _marked(connection.alias):
        return
    connection.transaction_mode = "IMMEDIATE"  # type: ignore[attr-defined]
    raw = connection.connection
    configured = float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 0) or 0)
    try:
        raw.execute(f"PRAGMA busy_timeout = {int(max(configured, BUSY_TIMEOUT) * 1000)}")
        (journal,) = raw.execute("PRAGMA journal_mode = WAL").fetchone()
    except sqlite3.Error as error:
        _forget(connection)  # the next operation connects, and is made safe, again
        if errors.is_retryable(error):  # locked or busy: the world, not the setting
            raise
        raise UnsafeSqlite(_refusal(connection.alias, str(error))) from error
    if str(journal).lower() not in _SAFE_JOURNALS:
        _forget(connection)
        raise UnsafeSqlite(_refusal(connection.alias, f"SQLite kept journal_mode={journal}"))


def _marked(alias: str) -> bool:
    return bool(getattr(_thread, "store", False)) or getattr(_thread, "steps_alias", None) == alias


def _forget(connection: BaseDatabaseWrapper) -> None:
    connection.connection.close()
    connection.connection = None


def _refusal(alias: str, why: str) -> str:
    return (
        f"the SQLite database of alias {alias!r} cannot use WAL ({why}): put DATABASES[{alias!r}]['NAME'] "
        "in a folder the workers can write, or use PostgreSQL"
    )


connection_created.connect(_made_safe, dispatch_uid="flowdeck.store.sqlite_connection")
