"""The one place where database failures become `spi.FlowStoreError`.

Whatever the driver raised stays reachable as `__cause__`; the store never lets a raw driver exception
out. A failure is retryable when trying again later can succeed: a lost connection, a serialization
failure or deadlock (PostgreSQL), a locked database (SQLite).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from django import db
from django.db import connections

from flowdeck.store import spi

try:  # psycopg is the PostgreSQL driver; an SQLite-only install may lack it
    import psycopg
except ImportError:  # pragma: no cover
    psycopg = None  # type: ignore[assignment]


SQLITE_LOCKED = 6  # the primary result code; extended codes carry it in their low byte


def is_retryable(error: BaseException) -> bool:
    """Transient: the same operation can succeed when tried again."""
    cause = error.__cause__ or error
    if psycopg is not None and isinstance(cause, psycopg.Error):
        # TransactionRollback covers serialization failures and deadlocks
        return isinstance(cause, psycopg.OperationalError | psycopg.InterfaceError)
    if isinstance(cause, sqlite3.OperationalError):
        text = str(cause).lower()
        return "locked" in text or "busy" in text or "unable to open" in text or "disk i/o" in text
    return isinstance(error, db.OperationalError | db.InterfaceError)


SQLITE_BUSY = 5
_SQLITE_WAITS = (SQLITE_BUSY, SQLITE_LOCKED)
_SQLITE_WAIT_TEXTS = ("database is locked", "database table is locked", "database is busy")


def is_transient(error: BaseException) -> bool:
    """An exception a step body raised that is the world not answering, for `EngineConfig.transient`:
    SQLite locked or busy (by its error code, the message where a driver gives none; never "no such
    table"), a lost PostgreSQL connection, a serialization failure or deadlock (`TransactionRollback`),
    and the store's own `FlowStoreError` that says it is retryable. Django's wrappers are looked through
    (`__cause__`)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, spi.FlowStoreError):
            return seen.retryable
        if isinstance(seen, sqlite3.Error):
            return _sqlite_waits(seen)
        if psycopg is not None and isinstance(seen, psycopg.Error):
            return isinstance(seen, psycopg.OperationalError | psycopg.InterfaceError)
        seen = seen.__cause__
    return False


def _sqlite_waits(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _SQLITE_WAITS
    text = str(error).lower()
    return any(words in text for words in _SQLITE_WAIT_TEXTS)


def is_shared_cache_lock(error: BaseException) -> bool:
    """SQLITE_LOCKED: another connection to the same shared-cache (in-memory) database holds the table.
    SQLite's busy timeout does not wait for this one, so the store waits for it itself."""
    while error is not None:
        if isinstance(error, sqlite3.OperationalError):
            return (getattr(error, "sqlite_errorcode", 0) & 0xFF) == SQLITE_LOCKED
        error = error.__cause__  # type: ignore[assignment]
    return False


@contextlib.contextmanager
def translated(operation: str, using: str) -> Iterator[None]:
    """Run a store operation; a database failure leaves as `FlowStoreError` naming the operation.

    A connection the failure left unusable is closed here, so the thread's next operation reconnects.
    """
    try:
        yield
    except (db.Error, sqlite3.Error) as error:
        _drop_if_broken(using)
        raise spi.FlowStoreError(f"{operation}: {error}", retryable=is_retryable(error)) from error
    except Exception as error:
        if psycopg is not None and isinstance(error, psycopg.Error):
            _drop_if_broken(using)
            raise spi.FlowStoreError(f"{operation}: {error}", retryable=is_retryable(error)) from error
        raise


def drop_broken_connections() -> None:
    """Close this thread's Django connections that a failure left unusable (the server ended them: a
    restart, a failover), so their next use connects again, to whichever server accepts writes now.

    Django itself does this only around a request (`close_if_unusable_or_obsolete` on its signals); a
    thread outside requests that met a lost connection would otherwise answer "the connection is closed"
    for the rest of its life. A connection that saw no error is left alone without a round trip."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or not connection.errors_occurred or connection.in_atomic_block:
            continue
        with contextlib.suppress(Exception):
            if connection.is_usable():  # as Django's own check: usable, the error was something else
                connection.errors_occurred = False
            else:
                connection.close()


def _drop_if_broken(using: str) -> None:
    with contextlib.suppress(Exception):
        connections[using].close_if_unusable_or_obsolete()
