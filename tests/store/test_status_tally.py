"""`count_by_status` on the Django store reads the status tally that migration 0010's triggers keep, on
SQLite and PostgreSQL: it must equal a count of the rows themselves after every kind of write (a store
start, a status change, a node's write, a bulk insert, a purge, a reset), fold its deltas without changing
a sum, and stay right while writers and folds run at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from django.db import connections

from flowdeck.store import counts, spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django import status_tally
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.django.tx import Tx
from tests.store.django_support import backend_alias, database_access, postgres_alias, sqlite_alias

__all__ = ["backend_alias", "database_access", "postgres_alias", "sqlite_alias"]

T0 = datetime(2032, 5, 1, tzinfo=UTC)
TALLY = "flowstore_status_tally"
R = TypeVar("R")


async def _db(alias: str, work: Callable[..., R], *args: Any) -> R:
    """`work(alias, *args)` on a thread of its own (the ORM refuses the event loop's), its connection
    closed after."""

    def run() -> R:
        try:
            return work(alias, *args)
        finally:
            connections[alias].close()

    return await asyncio.to_thread(run)


def _truth(alias: str) -> list[counts.StatusCount]:
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT flow_id, status_kind, count(*) FROM flowstore_execution GROUP BY flow_id, status_kind"
        )
        found = [counts.StatusCount(f, k, n) for f, k, n in cursor.fetchall()]
    return sorted(found, key=lambda c: (c.workflow_id, c.status))


def _sql(alias: str, *statements: str) -> None:
    with connections[alias].cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def _tally_rows(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {TALLY}")
        return int(cursor.fetchone()[0])


def _forget(alias: str, *flow_ids: str) -> None:
    """Delete the workflows' executions, their ledger first (it refers to them)."""
    flows = ", ".join(f"'{f}'" for f in flow_ids)
    owned = f"execution_id IN (SELECT id FROM flowstore_execution WHERE flow_id IN ({flows}))"
    ledger = ("flowstore_event", "flowstore_field", "flowstore_wait", "flowstore_progress")
    _sql(alias, *(f"DELETE FROM {table} WHERE {owned}" for table in ledger))
    _sql(alias, f"DELETE FROM flowstore_execution WHERE flow_id IN ({flows})")


def _insert(alias: str, flow_id: str, kind: str, *eids: str) -> None:
    values = ", ".join(
        f"('{eid}', '{flow_id}', 'h', '{{}}', '{kind}', FALSE, '', 1, 1, '2032-05-01', '2032-05-01')"
        for eid in eids
    )
    _sql(
        alias,
        "INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, cancel_requested,"
        f" cancel_reason, last_seq, serial, created, updated) VALUES {values}",
    )


def _bulk(alias: str, prefix: str, rows: int, kind: str) -> None:
    _insert(alias, "tally-bulk", kind, *(f"{prefix}{i}" for i in range(rows)))


def _event(eid: str) -> spi.Event:
    return spi.Event(spi.EventKind.CREATED, "tally-wf", eid, T0, {})


@pytest.fixture
async def store(backend_alias: str) -> AsyncIterator[DjangoStore]:
    opened = DjangoStore(backend_alias, ManualClock(T0), listen=False)
    yield opened
    await opened.aclose()


async def test_the_counts_follow_every_kind_of_write(backend_alias: str, store: DjangoStore) -> None:
    alias = backend_alias
    try:
        for i in range(6):
            created = await store.create_execution_if_absent(
                f"tally-{alias}-{i}", "tally-wf", "h", spi.Running(), _event(f"tally-{alias}-{i}")
            )
            assert created
        assert not await store.create_execution_if_absent(
            f"tally-{alias}-0", "tally-wf", "h", spi.Running(), _event(f"tally-{alias}-0")
        )
        assert await store.count_by_status() == await _db(alias, _truth)
        assert {c.status: c.executions for c in await store.count_by_status("tally-wf")} == {"running": 6}

        await _db(
            alias,
            _sql,
            f"UPDATE flowstore_execution SET status_kind = 'completed' WHERE id = 'tally-{alias}-1'",
            f"UPDATE flowstore_execution SET status_kind = 'failed' WHERE id = 'tally-{alias}-2'",
            f"UPDATE flowstore_execution SET last_seq = 9 WHERE id = 'tally-{alias}-3'",  # a node's write
        )
        await _db(alias, _bulk, f"tally-bulk-{alias}-", 40, "stopped")
        assert await store.count_by_status() == await _db(alias, _truth)
        assert {c.status: c.executions for c in await store.count_by_status("tally-wf")} == {
            "running": 4,
            "completed": 1,
            "failed": 1,
        }

        await _db(alias, _forget, "tally-wf", "tally-bulk")
        assert await store.count_by_status() == await _db(alias, _truth)
        assert await store.count_by_status("tally-wf") == []
    finally:
        await _db(alias, _forget, "tally-wf", "tally-bulk")


async def test_many_deltas_fold_into_one_row_per_sum(backend_alias: str, store: DjangoStore) -> None:
    alias = backend_alias
    try:
        await _db(alias, _bulk, f"fold-{alias}-", 20, "running")
        for round_ in range(status_tally.COMPACT_AFTER // 10 + 2):
            kind = "completed" if round_ % 2 == 0 else "running"
            await _db(
                alias,
                _sql,
                f"UPDATE flowstore_execution SET status_kind = '{kind}' WHERE flow_id = 'tally-bulk'",
            )
        before = await _db(alias, _tally_rows)
        assert before > status_tally.COMPACT_AFTER  # 20 rows x 2 deltas per round
        found = await store.count_by_status()
        assert found == await _db(alias, _truth)
        # one row per (workflow, kind) left; the zeros dropped
        assert await _db(alias, _tally_rows) == len(found)
        assert await store.count_by_status() == found
    finally:
        await _db(alias, _forget, "tally-bulk")


async def test_a_reset_empties_the_tally_with_the_executions(backend_alias: str, store: DjangoStore) -> None:
    alias = backend_alias
    await _db(alias, _bulk, f"reset-{alias}-", 5, "failed")
    await asyncio.to_thread(store.reset)
    assert await store.count_by_status() == await _db(alias, _truth) == []
    assert await _db(alias, _tally_rows) == 0


async def test_folds_running_beside_writers_lose_no_delta(postgres_alias: str, database_access: None) -> None:
    alias = postgres_alias
    store = DjangoStore(alias, ManualClock(T0), listen=False)
    stop = threading.Event()

    def write(worker: int) -> None:
        # Each writer makes rows and moves them between kinds, committing each statement on its own.
        try:
            for i in range(60):
                eid = f"race-{worker}-{i}"
                _insert(alias, "tally-race", "running", eid)
                _sql(alias, f"UPDATE flowstore_execution SET status_kind = 'completed' WHERE id = '{eid}'")
                if i % 3 == 0:
                    _sql(alias, f"DELETE FROM flowstore_execution WHERE id = '{eid}'")
        finally:
            connections[alias].close()

    def fold() -> None:
        try:
            while not stop.is_set():
                with connections[alias].cursor() as cursor:
                    status_tally.compact(Tx(cursor, connections[alias]))
        finally:
            connections[alias].close()

    try:
        folder = threading.Thread(target=fold)
        folder.start()
        await asyncio.gather(*(asyncio.to_thread(write, w) for w in range(4)))
        stop.set()
        await asyncio.to_thread(folder.join)
        assert await store.count_by_status() == await _db(alias, _truth)
        assert {c.status: c.executions for c in await store.count_by_status("tally-race")} == {
            "completed": 160
        }
    finally:
        stop.set()
        await _db(alias, _forget, "tally-race")
        await store.aclose()


async def test_the_list_s_totals_of_whole_kinds_are_the_tally_s(
    backend_alias: str, store: DjangoStore
) -> None:
    alias = backend_alias
    arm = spi.ExecutionFilter
    try:
        await _db(alias, _bulk, f"list-{alias}-a", 7, "failed")
        await _db(alias, _bulk, f"list-{alias}-b", 3, "stopped")
        for filt, kind in [
            (None, None),
            (arm.Failed(), "failed"),
            (arm.Stopped(), "stopped"),
            (arm.Running(), "running"),
        ]:
            truth = [c for c in await _db(alias, _truth) if kind is None or c.status == kind]
            page = await store.list_executions(None, filt, limit=0)
            assert page.total == sum(c.executions for c in truth), filt
        assert (await store.list_executions("tally-bulk", arm.Failed(), limit=0)).total == 7
        assert (await store.list_executions("tally-bulk", None, limit=0)).total == 10
        # the total is the tally's, not a count of the rows: a delta the rows do not have shows in it
        await _db(
            alias, _sql, f"INSERT INTO {TALLY} (flow_id, status_kind, n) VALUES ('tally-bulk', 'failed', 5)"
        )
        assert (await store.list_executions("tally-bulk", arm.Failed(), limit=0)).total == 12
        await _db(
            alias, _sql, f"INSERT INTO {TALLY} (flow_id, status_kind, n) VALUES ('tally-bulk', 'failed', -5)"
        )
        # a narrower arm still counts its rows
        assert (await store.list_executions("tally-bulk", arm.Failed("Declined"), limit=0)).total == 0
        assert (await store.list_executions("tally-bulk", arm.Stopped("F0001"), limit=0)).total == 0
    finally:
        await _db(alias, _forget, "tally-bulk")
