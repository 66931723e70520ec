"""`store.django.errors.is_transient`, the predicate the Django composition root gives the engine: a locked
or busy database, a lost connection, a serialization failure or deadlock and a retryable FlowStoreError are
the world not answering; a missing table or a broken query is a mistake."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import psycopg
import pytest
from django import db
from psycopg import errors as pg

from flowdeck.store import spi
from flowdeck.store.django.errors import is_transient


def _raised(error: BaseException, cause: BaseException) -> BaseException:
    """`error` as Django raises it, its driver's error its `__cause__`."""
    try:
        raise error from cause
    except BaseException as raised:
        return raised


@pytest.fixture
def locked_error(tmp_path: Path) -> sqlite3.OperationalError:
    """What SQLite really raises at a connection that finds another holding the write lock."""
    path = tmp_path / "db.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN IMMEDIATE")
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        with contextlib.closing(other), pytest.raises(sqlite3.OperationalError) as caught:
            other.execute("BEGIN IMMEDIATE")
        holder.execute("ROLLBACK")
    return caught.value


def test_a_locked_sqlite_database_is_transient_by_its_code_and_through_djangos_wrapper(
    locked_error: sqlite3.OperationalError,
) -> None:
    assert locked_error.sqlite_errorcode & 0xFF == 5  # SQLITE_BUSY
    assert is_transient(locked_error)
    assert is_transient(_raised(db.OperationalError(str(locked_error)), locked_error))


def test_sqlite_text_is_the_fallback_and_a_missing_table_is_a_mistake() -> None:
    assert is_transient(sqlite3.OperationalError("database is locked"))
    assert is_transient(sqlite3.OperationalError("database table is locked: flowstore_execution"))
    missing = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as caught:
        missing.execute("SELECT * FROM nowhere")
    missing.close()
    assert not is_transient(caught.value)
    assert not is_transient(_raised(db.OperationalError("no such table: nowhere"), caught.value))
    assert not is_transient(sqlite3.OperationalError("no such table: nowhere"))


def test_postgres_connection_errors_and_transaction_rollbacks_are_transient() -> None:
    assert is_transient(_raised(db.OperationalError("gone"), psycopg.OperationalError("connection lost")))
    assert is_transient(_raised(db.InterfaceError("closed"), psycopg.InterfaceError("connection closed")))
    assert is_transient(pg.SerializationFailure("could not serialize access"))
    assert is_transient(pg.DeadlockDetected("deadlock detected"))
    assert not is_transient(_raised(db.IntegrityError("dup"), pg.UniqueViolation("duplicate key")))
    assert not is_transient(pg.UndefinedTable("relation does not exist"))


def test_the_stores_own_error_is_transient_when_it_says_it_is_retryable() -> None:
    assert is_transient(spi.FlowStoreError("claim_ready: database is locked", retryable=True))
    assert not is_transient(spi.FlowStoreError("refused", retryable=False))
    assert not is_transient(ValueError("database is locked"))  # words alone, from no database
