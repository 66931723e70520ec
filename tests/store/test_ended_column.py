"""`flowstore_execution.ended` is kept by the database (migration 0009's triggers), on SQLite and
PostgreSQL: set to `updated` by the one write that turns a status ended, or by the insert of a row already
ended; never by another write, so node writes leave it (and its index) alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections

from tests.store.django_support import backend_alias, database_access, postgres_alias, sqlite_alias

__all__ = ["backend_alias", "database_access", "postgres_alias", "sqlite_alias"]

T0 = datetime(2031, 3, 1, tzinfo=UTC)


def _insert(alias: str, eid: str, kind: str, at: datetime) -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, cancel_requested,"
            " cancel_reason, last_seq, serial, created, updated) VALUES (%s, 'wf', 'h', '{}', %s, %s, '', 1,"
            " 1, %s, %s)",
            [eid, kind, False, at, at],
        )


def _update(alias: str, eid: str, **columns: Any) -> None:
    sets = ", ".join(f"{name} = %s" for name in columns)
    with connections[alias].cursor() as cursor:
        cursor.execute(f"UPDATE flowstore_execution SET {sets} WHERE id = %s", [*columns.values(), eid])


def _ended(alias: str, eid: str) -> datetime | None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT ended FROM flowstore_execution WHERE id = %s", [eid])
        (value,) = cursor.fetchone()
    if value is None or isinstance(value, datetime):
        return value.astimezone(UTC) if value is not None else None
    return connections[alias].ops.convert_datetimefield_value(value, None, connections[alias])  # SQLite text


def _delete(alias: str, *eids: str) -> None:
    with connections[alias].cursor() as cursor:
        for eid in eids:
            cursor.execute("DELETE FROM flowstore_execution WHERE id = %s", [eid])


def test_the_write_that_ends_an_execution_sets_ended_and_no_other_write_does(backend_alias: str) -> None:
    alias, eid = backend_alias, f"ended-{backend_alias}"
    _insert(alias, eid, "running", T0)
    try:
        _update(alias, eid, updated=T0 + timedelta(seconds=5), last_seq=2)  # a node's write
        assert _ended(alias, eid) is None
        _update(alias, eid, status_kind="completed", updated=T0 + timedelta(seconds=9))
        assert _ended(alias, eid) == T0 + timedelta(seconds=9)
        _update(alias, eid, updated=T0 + timedelta(seconds=30))  # a write after the end moves nothing
        assert _ended(alias, eid) == T0 + timedelta(seconds=9)
    finally:
        _delete(alias, eid)


def test_a_stop_is_no_end_and_a_row_inserted_ended_has_its_end(backend_alias: str) -> None:
    alias = backend_alias
    _insert(alias, f"stop-{alias}", "running", T0)
    _insert(alias, f"born-ended-{alias}", "failed", T0 + timedelta(seconds=3))
    try:
        _update(alias, f"stop-{alias}", status_kind="stopped", updated=T0 + timedelta(seconds=4))
        assert _ended(alias, f"stop-{alias}") is None  # a person is to act: it has not ended
        assert _ended(alias, f"born-ended-{alias}") == T0 + timedelta(seconds=3)
    finally:
        _delete(alias, f"stop-{alias}", f"born-ended-{alias}")
