"""The store makes SQLite safe for itself whatever the alias's OPTIONS: on `startproject`'s own DATABASES
(ENGINE and NAME, nothing else) its connections use WAL, wait 30 s for a lock and begin IMMEDIATE; a file
it cannot put in WAL is refused with one line saying what to do; an in-memory database keeps working."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from flowdeck.engine import body_threads
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django import sqlite_connection
from flowdeck.store.django.sqlite_connection import UnsafeSqlite
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import add_alias, database_access, migrate, remove_alias  # noqa: F401

WF1 = "wf1"


def _event(eid: str) -> spi.Event:
    return spi.Event(spi.EventKind.CREATED, WF1, eid, ManualClock().now(), {})


def startproject(path: Path | str) -> dict[str, Any]:
    """`django-admin startproject`'s DATABASES entry, on another file."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": path}


_aliases = itertools.count()


@pytest.fixture
def plain_sqlite(tmp_path: Path, database_access: None) -> Iterator[tuple[str, Path]]:  # noqa: F811
    """A migrated SQLite file configured as `startproject` does (no OPTIONS), under an alias of its own (a
    thread keeps its connection per alias name)."""
    path = tmp_path / "db.sqlite3"
    alias = f"fd_sqlite_plain{next(_aliases)}"
    add_alias(alias, startproject(path))
    migrate(alias)
    connections[alias].close()  # migrate's connection: deferred, rollback journal
    yield alias, path
    remove_alias(alias)  # left configured, another module's flush of every alias would meet it


@pytest.fixture
def memory_sqlite(database_access: None) -> Iterator[str]:  # noqa: F811
    """A migrated in-memory shared-cache SQLite database configured as `startproject` would name it."""
    uri = "file:fd_plain_memory?mode=memory&cache=shared"
    keeper = sqlite3.connect(uri, uri=True)
    add_alias("fd_sqlite_memory", startproject(uri))
    migrate("fd_sqlite_memory")
    yield "fd_sqlite_memory"
    remove_alias("fd_sqlite_memory")
    keeper.close()


@pytest.fixture
def readonly_sqlite(plain_sqlite: tuple[str, Path]) -> Iterator[str]:
    """The plain file in the rollback journal, opened read-only: SQLite cannot put it in WAL."""
    _, path = plain_sqlite
    with contextlib.closing(sqlite3.connect(path)) as other:
        other.execute("PRAGMA journal_mode=DELETE")
    add_alias("fd_sqlite_readonly", startproject(f"file:{path}?mode=ro"))
    yield "fd_sqlite_readonly"
    remove_alias("fd_sqlite_readonly")


def _probe(alias: str) -> tuple[str | None, str, int]:
    """On the store's thread: its connection's transaction mode, journal mode and busy timeout (ms)."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        (journal,) = cursor.fetchone()
        cursor.execute("PRAGMA busy_timeout")
        (busy,) = cursor.fetchone()
    return connection.transaction_mode, journal, busy  # type: ignore[attr-defined]


async def test_a_store_on_startprojects_sqlite_uses_wal_immediate_and_a_30s_busy_timeout(
    plain_sqlite: tuple[str, Path],
) -> None:
    alias, path = plain_sqlite
    store = DjangoStore(alias, ManualClock())
    try:
        assert await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1")) is not None
        probed = await asyncio.get_running_loop().run_in_executor(store._pool, _probe, alias)
        assert probed == ("IMMEDIATE", "wal", 30_000)
        with contextlib.closing(sqlite3.connect(path)) as other:  # the file's mode: the host's too
            assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        await store.aclose()


async def test_steps_on_the_stores_database_are_made_safe_and_on_another_left_alone(
    plain_sqlite: tuple[str, Path], tmp_path: Path
) -> None:
    """A step reading then writing in one `transaction.atomic()` under startproject's deferred transactions
    met `database is locked` at once whenever another connection wrote in between (seven of 200 orders
    stopped F0003 on a loaded machine): the threads that run steps take the write lock at BEGIN on the
    store's database, and wait for it. The host's other databases stay as configured."""
    alias, _ = plain_sqlite
    other = f"fd_sqlite_other{next(_aliases)}"
    add_alias(other, startproject(tmp_path / "other.sqlite3"))

    def probe_both() -> tuple[tuple[str | None, str, int], str | None]:
        try:
            return _probe(alias), _probe(other)[0]
        finally:
            connections[alias].close()
            connections[other].close()

    marked = functools.partial(sqlite_connection.mark_steps_thread, alias)
    before = body_threads.prepare_threads("store", marked)  # as console.runtime does for its store
    try:
        assert await body_threads.run_in_thread(probe_both) == (("IMMEDIATE", "wal", 30_000), None)
    finally:
        body_threads.prepare_threads("store", before)
        remove_alias(other)


async def test_a_writer_holding_the_lock_is_waited_for_not_reported(plain_sqlite: tuple[str, Path]) -> None:
    alias, path = plain_sqlite
    store = DjangoStore(alias, ManualClock())
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        await store.signal("e0", "x", spi.FieldData.of(1, "int"), _event("e0"))  # connected, in WAL
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE flowstore_execution SET updated = updated")
        signalled = asyncio.ensure_future(store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1")))
        done, _ = await asyncio.wait({signalled}, timeout=0.3)  # still waiting for the holder's lock
        assert not done
        holder.execute("COMMIT")
        assert await signalled == spi.AlreadyTerminal(spi.Cancelled())
    finally:
        holder.close()
        await store.aclose()


async def test_a_database_that_cannot_use_wal_is_refused_in_one_line(readonly_sqlite: str) -> None:
    store = DjangoStore(readonly_sqlite, ManualClock())
    try:
        with pytest.raises(UnsafeSqlite) as caught:
            await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1"))
        message = str(caught.value)
        assert "\n" not in message
        assert "'fd_sqlite_readonly' cannot use WAL" in message
        assert "in a folder the workers can write, or use PostgreSQL" in message
        assert not caught.value.retryable
    finally:
        await store.aclose()


async def test_an_in_memory_database_keeps_working(memory_sqlite: str) -> None:
    store = DjangoStore(memory_sqlite, ManualClock())
    try:
        assert await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1")) is not None
        probed = await asyncio.get_running_loop().run_in_executor(store._pool, _probe, memory_sqlite)
        assert probed == ("IMMEDIATE", "memory", 1000 * int(sqlite_connection.BUSY_TIMEOUT))
    finally:
        await store.aclose()
