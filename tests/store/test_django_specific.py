"""What the conformance suite cannot say about the Django store: index-backed searches on PostgreSQL,
failures surfacing as FlowStoreError, and wake-ups between store objects (other connections)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connections

from flowdeck.store import concurrency, spi
from flowdeck.store.clock import ManualClock, SystemClock
from flowdeck.store.django import sqlite_connection
from flowdeck.store.django.store import DjangoStore, counted, executions_matching
from tests.store.django_support import (
    add_alias,
    backend_alias,
    database_access,
    migrate,
    postgres_alias,
    postgres_config,
    postgres_url,
    remove_alias,
    sqlite_alias,
    sqlite_config,
    truncate_store,
)

__all__ = ["backend_alias", "database_access", "postgres_alias", "sqlite_alias"]

F = spi.ExecutionFilter
WF1 = "wf1"
SERVED = frozenset({(WF1, "")})
LEASE = timedelta(seconds=30)

ARMS: list[spi.ExecutionFilter.Any | None] = [
    None,
    F.Running(),
    F.Completed(),
    F.Cancelled(),
    F.Compensating(),
    F.Failed(),
    F.Failed("ChargeDeclined"),
    F.Sleeping(),
    F.WaitingForInput(),
    F.WaitingForInput("approval"),
    F.Cancelling(),
    F.Orphaned(frozenset({"h1"})),
    F.Stopped(),
    F.Stopped("F0001"),
]

# 20,000 rows over 4 workflows, 2 versions and every status; a fifth of them wait (on a sleep or an input).
_SEED = """
INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, failure_kind, stop_code,
    cancel_requested, cancel_reason, last_seq, serial, created, updated)
SELECT 'x' || lpad(g::text, 6, '0'), 'wf' || (g % 4), 'h' || (g % 2),
    '{"type":"' || k.kind || '"}', k.kind,
    CASE WHEN k.kind = 'failed' THEN (ARRAY['ChargeDeclined', 'OutOfStock'])[1 + g % 2] END,
    CASE WHEN k.kind = 'stopped' THEN (ARRAY['F0001', 'F0003'])[1 + g % 2] END,
    g % 50 = 0, '', 1, g, timestamptz '2030-01-01' + g * interval '1 second',
    timestamptz '2030-01-01' + g * interval '1 second'
FROM generate_series(1, 20000) AS g
CROSS JOIN LATERAL (SELECT (ARRAY['running', 'completed', 'failed', 'compensating', 'cancelled',
    'stopped'])[1 + g % 6] AS kind) AS k;
INSERT INTO flowstore_wait (execution_id, path, kind, at, field_name)
SELECT 'x' || lpad(g::text, 6, '0'), 'w',
    CASE WHEN g % 10 = 0 THEN 'at' ELSE 'on_field' END,
    CASE WHEN g % 10 = 0 THEN timestamptz '2031-01-01' END,
    CASE WHEN g % 10 = 5 THEN (ARRAY['approval', 'address'])[1 + g % 2] END
FROM generate_series(1, 20000) AS g WHERE g % 5 = 0;
ANALYZE flowstore_execution;
ANALYZE flowstore_wait;
"""


@pytest.fixture(scope="module")
def seeded_postgres(postgres_alias: str, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        store = DjangoStore(postgres_alias, listen=False, pool_size=2)
        store.reset()
        with connections[postgres_alias].cursor() as cursor:
            for statement in _SEED.split(";"):
                if statement.strip():
                    cursor.execute(statement)
        try:
            yield postgres_alias
        finally:
            truncate_store(postgres_alias)
            store.reset()
            store.close()


def _plans(alias: str, filt: spi.ExecutionFilter.Any | None, flow_id: str | None, prefix: str | None) -> str:
    """The plans of a search's page and of its count, with sequential scans priced out (so that a plan
    shows whether an index CAN serve the query, whatever the table's size)."""
    matching = executions_matching(alias, flow_id, filt, prefix)
    with connections[alias].cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    try:
        page = matching.order_by("-created", "-serial")[:50].explain()
        counting = counted(alias, flow_id, filt, prefix, matching)
        # a count reads ids only (what `.count()` asks of the rows it counts)
        count = (counting.values("id") if counting is matching else counting).explain()
    finally:
        with connections[alias].cursor() as cursor:
            cursor.execute("RESET enable_seqscan")
    return f"{page}\n{count}"


@pytest.mark.postgres
@pytest.mark.parametrize("flow_id", [None, "wf1"])
@pytest.mark.parametrize("filt", ARMS, ids=lambda arm: type(arm).__name__ if arm else "none")
def test_every_search_arm_is_index_backed_on_postgres(
    seeded_postgres: str, database_access: None, filt: spi.ExecutionFilter.Any | None, flow_id: str | None
) -> None:
    plans = _plans(seeded_postgres, filt, flow_id, None)
    print(f"--- {filt!r} flow_id={flow_id}\n{plans}")
    assert "Seq Scan" not in plans, plans
    assert "Index" in plans, plans


@pytest.mark.postgres
def test_id_prefix_search_is_index_backed_on_postgres(seeded_postgres: str, database_access: None) -> None:
    plans = _plans(seeded_postgres, None, None, "x0001")
    print(plans)
    assert "Seq Scan" not in plans, plans
    assert "fs_exec_id_prefix" in plans or "Index" in plans, plans


@pytest.mark.postgres
def test_an_id_prefix_naming_old_executions_pages_from_its_matches(
    seeded_postgres: str, database_access: None
) -> None:
    """ "x0001" names 100 of the oldest of 20,000 rows: a walk down the created index would pass the
    19,800 newer ones first; the page is taken from the matches (the id index), then sorted."""
    from flowdeck.store.django import queries

    inner, params = (
        executions_matching(seeded_postgres, None, None, "x0001")
        .values("id", "created", "serial")
        .query.sql_with_params()
    )
    with connections[seeded_postgres].cursor() as cursor:
        sql = queries.SORTED_PAGE.text("postgresql").format(matching=inner, order="created")
        cursor.execute("EXPLAIN " + sql, [*params, 25, 10])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(sql, [*params, 25, 10])
        page = [row[0] for row in cursor.fetchall()]
    assert "fs_exec_created" not in plan, plan
    assert "Index" in plan, plan
    assert page == [f"x000{n}" for n in range(189, 164, -1)]


@pytest.mark.postgres
def test_a_creation_window_walks_the_created_index(seeded_postgres: str, database_access: None) -> None:
    """A creation window is a range on the created index."""
    everything = executions_matching(seeded_postgres, None, None, None)
    (last,) = everything.order_by("-created").values_list("created", flat=True)[:1]
    window = executions_matching(seeded_postgres, None, None, None, created_after=last - timedelta(minutes=5))
    windowed = window.order_by("-created", "-serial")[:25].explain()
    assert "fs_exec_created" in windowed, windowed


@pytest.mark.postgres
async def test_an_id_prefix_page_is_newest_first_with_its_offset_and_exact_total(
    postgres_alias: str, database_access: None
) -> None:
    clock = ManualClock()
    store = DjangoStore(postgres_alias, clock, pool_size=1, listen=False)
    store.reset()
    try:
        for eid in [f"old-{i:02d}" for i in range(30)] + [f"new-{i:02d}" for i in range(10)]:
            await clock.advance(1)
            assert await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
        page = await store.list_executions(None, None, limit=5, offset=3, id_prefix="old-")
        everything = await store.list_executions(None, None, limit=8)
    finally:
        await store.aclose()
    assert page.total == 30
    assert [s.execution_id for s in page.items] == ["old-26", "old-25", "old-24", "old-23", "old-22"]
    assert [s.execution_id for s in everything.items][:3] == ["new-09", "new-08", "new-07"]


@pytest.mark.postgres
def test_claim_and_next_wake_are_index_backed_on_postgres(
    seeded_postgres: str, database_access: None
) -> None:
    from flowdeck.store.django import queries

    params: dict[str, object] = {"now": "2030-06-01T00:00:00Z", "limit": 8, "executor": "x", "expiry": None}
    served = queries.served_predicate(sorted({("wf1", "h1"), ("wf2", "h0")}), params)
    # the SELECT half (no stamping in a test), in both of the claim's orders (by priority; a fair turn's)
    ready = [queries.CLAIM_READY.sql.format(served=served, order=o) for o in queries.CLAIM_ORDER.values()]
    wake = queries.NEXT_WAKE.sql.format(served=served)
    with connections[seeded_postgres].cursor() as cursor:
        plans = []
        cursor.execute("SET enable_seqscan = off")
        for sql in (*ready, wake):
            cursor.execute("EXPLAIN " + sql, params)
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
        cursor.execute("RESET enable_seqscan")
    print("\n".join(plans))
    for plan in plans:
        assert "Seq Scan on flowstore_execution" not in plan, plan


# ------------------------------------------------------------------------------------ failures


@pytest.fixture
def impatient_sqlite(
    tmp_path: Path, database_access: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A migrated SQLite file whose connections give up on a lock after 50 ms (the store's own too: they
    wait at least `sqlite_connection.BUSY_TIMEOUT`)."""
    monkeypatch.setattr(sqlite_connection, "BUSY_TIMEOUT", 0.05)
    path = tmp_path / "locked.sqlite3"
    config = sqlite_config(path)
    config["OPTIONS"] = {**config["OPTIONS"], "timeout": 0.05}
    add_alias("fd_sqlite_locked", config)
    migrate("fd_sqlite_locked")
    yield path
    remove_alias("fd_sqlite_locked")


async def test_a_locked_sqlite_database_is_a_retryable_store_error(impatient_sqlite: Path) -> None:
    store = DjangoStore("fd_sqlite_locked", ManualClock(), pool_size=2)
    holder = sqlite3.connect(impatient_sqlite, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(spi.FlowStoreError) as caught:
            await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1"))
        assert caught.value.retryable
        assert caught.value.__cause__ is not None
        holder.execute("ROLLBACK")
        # the store recovers once the lock is gone
        assert await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1")) == spi.AlreadyTerminal(
            spi.Cancelled()
        )
    finally:
        holder.close()
        await store.aclose()


@pytest.fixture
def shared_cache_sqlite(database_access: None) -> Iterator[str]:
    """A migrated in-memory shared-cache SQLite database (what Django's test runner gives SQLite), kept
    alive by the connection the fixture yields the URI of."""
    uri = "file:fd_shared_cache?mode=memory&cache=shared"
    keeper = sqlite3.connect(uri, uri=True)
    add_alias("fd_sqlite_shared", {**sqlite_config(Path("unused")), "NAME": uri})
    migrate("fd_sqlite_shared")
    try:
        yield uri
    finally:
        remove_alias("fd_sqlite_shared")
        keeper.close()


async def test_a_shared_cache_lock_is_waited_out_not_reported(shared_cache_sqlite: str) -> None:
    # SQLite's busy timeout does not wait for a shared-cache lock (SQLITE_LOCKED): the store must, or a
    # request thread's write meeting a worker's `finish` abandons the attempt until its lease lapses.
    store = DjangoStore("fd_sqlite_shared", ManualClock())
    holder = sqlite3.connect(shared_cache_sqlite, uri=True, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        asyncio.get_running_loop().call_later(0.2, holder.execute, "ROLLBACK")
        started = time.monotonic()
        answer = await store.signal("e1", "x", spi.FieldData.of(1, "int"), _event("e1"))
        assert answer == spi.AlreadyTerminal(spi.Cancelled())
        assert time.monotonic() - started >= 0.15  # it waited for the holder, it did not skip the lock
    finally:
        holder.close()
        await store.aclose()


async def test_an_unreachable_postgres_is_a_retryable_store_error(database_access: None) -> None:
    add_alias("fd_postgres_nowhere", postgres_config("postgresql://postgres@127.0.0.1:1/flowdeck_nowhere"))
    store = DjangoStore("fd_postgres_nowhere", ManualClock(), listen=False, pool_size=2)
    try:
        with pytest.raises(spi.FlowStoreError) as caught:
            await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        assert caught.value.retryable
        assert caught.value.__cause__ is not None
    finally:
        await store.aclose()
        remove_alias("fd_postgres_nowhere")


async def test_a_refused_operation_is_a_non_retryable_store_error(
    sqlite_alias: str, database_access: None
) -> None:
    store = DjangoStore(sqlite_alias, ManualClock(), pool_size=2)
    store.reset()
    try:
        await store.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
        # a value the database refuses (an over-long id does not fit PostgreSQL; SQLite stores any text):
        # writing a field under a name that is NOT text is refused by the driver on both backends
        with pytest.raises(spi.FlowStoreError) as caught:
            await store.signal("e1", object(), spi.FieldData.of(1, "int"), _event("e1"))  # type: ignore[arg-type]
        assert not caught.value.retryable
        assert isinstance(caught.value.__cause__, Exception)
    finally:
        await store.aclose()


def _event(eid: str, kind: spi.EventKind = spi.EventKind.CREATED) -> spi.Event:
    return spi.Event(kind, WF1, eid, ManualClock().now(), {})


# ------------------------------------------------------------------------------------ unknown ids


async def test_unknown_executions_answer_and_never_raise(backend_alias: str) -> None:
    alias = backend_alias
    store = DjangoStore(alias, ManualClock(), pool_size=2)
    store.reset()
    value = spi.FieldData.of(1, "int")
    try:
        assert await store.get_execution("nope") is None
        assert await store.signal("nope", "x", value, _event("nope")) == spi.AlreadyTerminal(spi.Cancelled())
        assert await store.request_cancel("nope", "why") == spi.AlreadyTerminal(spi.Cancelled())
        assert await store.resume("nope", "h", _event("nope")) == spi.OperatorOutcome.NOT_FOUND
        assert await store.answer("nope", "n", value, _event("nope")) == spi.OperatorOutcome.NOT_FOUND
        assert await store.end("nope", spi.Failed("x"), _event("nope")) == spi.OperatorOutcome.NOT_FOUND
        assert await store.get_history("nope") == spi.HistoryPage([], False)
        assert await store.get_all_fields("nope") == {}
        assert await store.get_field("nope", "x") is None
    finally:
        await store.aclose()


# ------------------------------------------------------------------------------------ wake-ups


async def test_a_signal_through_another_store_wakes_a_blocked_poll(backend_alias: str) -> None:
    """Two store objects are two sets of connections, as two processes would have: the wake crosses by
    LISTEN/NOTIFY on PostgreSQL and by the data_version watch on SQLite, long before the poll's timeout."""
    alias = backend_alias
    waiting, writing = (
        DjangoStore(alias, SystemClock(), pool_size=2),
        DjangoStore(alias, SystemClock(), pool_size=2),
    )
    waiting.reset()
    try:
        await writing.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
        [handle] = await writing.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        wait = spi.WakeOnField("x")
        assert (
            await handle.record_wait("x", wait, _event("e1", spi.EventKind.INPUT_WAITING))
            is spi.WriteOutcome.APPLIED
        )
        assert await handle.finish(spi.Suspended(frozenset({"x"}))) is spi.StatusOutcome.APPLIED
        poll = asyncio.ensure_future(waiting.claim_ready(SERVED, "ex", LEASE, 1, timedelta(seconds=30)))
        await asyncio.sleep(0.3)  # let the poll ask once and block (real time: a real clock store)
        assert not poll.done()
        delivered = await writing.signal(
            "e1", "x", spi.FieldData.of(1, "int"), _event("e1", spi.EventKind.INPUT_RECEIVED)
        )
        assert delivered == spi.Delivered()
        claimed = await asyncio.wait_for(poll, 10)
        assert [c.state.execution_id for c in claimed] == ["e1"]
    finally:
        await waiting.aclose()
        await writing.aclose()


async def test_a_limited_ending_through_another_store_wakes_the_poll_waiting_for_its_slot(
    backend_alias: str,
) -> None:
    """An execution queued behind its key's one slot is claimed as soon as the holder ends in another
    process (the ending's own statement NOTIFYs on PostgreSQL; SQLite's data_version watch), long before
    the holder's lease would have lapsed."""
    alias = backend_alias
    waiting, writing = (
        DjangoStore(alias, SystemClock(), pool_size=2),
        DjangoStore(alias, SystemClock(), pool_size=2),
    )
    waiting.reset()
    limits = concurrency.event_data(concurrency.Limits(key="k", per_key=1))
    meta = spi.WorkflowMeta(concurrency="1 per key")
    try:
        await writing.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="", meta=meta))
        for eid in ("e1", "e2"):
            created = spi.Event(spi.EventKind.CREATED, WF1, eid, ManualClock().now(), limits)
            assert await writing.create_execution_if_absent(eid, WF1, "", spi.Running(), created)
        [holder] = await writing.claim_ready(SERVED, "ex", timedelta(seconds=60), 2, timedelta(0))
        assert holder.state.execution_id == "e1"
        poll = asyncio.ensure_future(waiting.claim_ready(SERVED, "ex", LEASE, 1, timedelta(seconds=30)))
        await asyncio.sleep(0.3)  # let the poll ask once and block (real time: a real clock store)
        assert not poll.done()
        ending = _event("e1", spi.EventKind.COMPLETED)
        assert await holder.finish(spi.Terminal(spi.Completed(), ending)) is spi.StatusOutcome.APPLIED
        claimed = await asyncio.wait_for(poll, 10)
        assert [c.state.execution_id for c in claimed] == ["e2"]
    finally:
        await waiting.aclose()
        await writing.aclose()


async def test_a_create_through_another_store_wakes_a_blocked_poll(backend_alias: str) -> None:
    """Starting an execution is a write that makes a row ready: a poll blocked in another store (another
    process's connections) claims it long before its timeout."""
    waiting, writing = (
        DjangoStore(backend_alias, SystemClock(), pool_size=2),
        DjangoStore(backend_alias, SystemClock(), pool_size=2),
    )
    waiting.reset()
    try:
        poll = asyncio.ensure_future(waiting.claim_ready(SERVED, "ex", LEASE, 1, timedelta(seconds=30)))
        await asyncio.sleep(0.3)  # let the poll ask once and block (real time: a real clock store)
        assert not poll.done()
        assert await writing.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1")) is True
        claimed = await asyncio.wait_for(poll, 10)
        assert [c.state.execution_id for c in claimed] == ["e1"]
    finally:
        await waiting.aclose()
        await writing.aclose()


async def test_racing_creates_of_one_id_leave_exactly_one_execution(backend_alias: str) -> None:
    """Eight stores start the same id at once, each with its own seed field: one answers True, and the row,
    fields and history are that one's alone; later writes number their events after its Created."""
    clock = ManualClock()
    stores = [DjangoStore(backend_alias, clock, pool_size=1) for _ in range(8)]
    stores[0].reset()
    try:
        created = await asyncio.gather(
            *(
                s.create_execution_if_absent(
                    "e1", WF1, "", spi.Running(), _event("e1"), {f"seed{i}": spi.FieldData.of(i, "int")}
                )
                for i, s in enumerate(stores)
            )
        )
        assert sorted(created) == [False] * 7 + [True]
        winner = created.index(True)
        store = stores[0]
        assert await store.get_all_fields("e1") == {f"seed{winner}": spi.FieldData.of(winner, "int")}
        [handle] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        assert await handle.append_event(_event("e1", spi.EventKind.STEP_STARTED)) is spi.WriteOutcome.APPLIED
        history = (await store.get_history("e1")).events
        assert [(e.seq, e.kind) for e in history] == [
            (1, spi.EventKind.CREATED),
            (2, spi.EventKind.STEP_STARTED),
        ]
    finally:
        for s in stores:
            await s.aclose()


async def test_a_claim_whose_caller_stopped_waiting_is_given_back(backend_alias: str) -> None:
    """The claim runs on a database thread; a caller cancelled meanwhile never sees its rows, so the store
    hands them straight back instead of leaving them held until their lease lapses."""
    alias = backend_alias
    store = DjangoStore(alias, ManualClock(), pool_size=2)
    store.reset()
    try:
        await store.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
        poll = asyncio.ensure_future(store.claim_ready(SERVED, "gone", LEASE, 1, timedelta(0)))
        await asyncio.sleep(0)  # the ask is on its thread
        poll.cancel()
        with pytest.raises(asyncio.CancelledError):
            await poll
        # the clock never moves, so only a give-back (not a lapsed lease) lets "next" have the row
        give_up = time.monotonic() + 10
        while not (claimed := await store.claim_ready(SERVED, "next", LEASE, 1, timedelta(0))):
            assert time.monotonic() < give_up, "the claim was never given back"
            await asyncio.sleep(0.01)
        [again] = claimed
        assert again.state.execution_id == "e1"
        assert again.state.executor == "next"
    finally:
        await store.aclose()


@pytest.mark.postgres
async def test_a_registration_through_another_store_ends_a_blocked_poll(
    postgres_alias: str, database_access: None
) -> None:
    """A registration elsewhere may widen what this caller serves: its poll asks once and answers."""
    waiting, writing = (
        DjangoStore(postgres_alias, SystemClock(), pool_size=2),
        DjangoStore(postgres_alias, SystemClock(), pool_size=2),
    )
    waiting.reset()
    try:
        poll = asyncio.ensure_future(waiting.claim_ready(SERVED, "ex", LEASE, 1, timedelta(seconds=30)))
        await asyncio.sleep(0.3)  # real time: let the poll ask once and block
        await writing.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="h1"))
        assert await asyncio.wait_for(poll, 10) == []
    finally:
        await waiting.aclose()
        await writing.aclose()


@pytest.mark.postgres
async def test_a_refusal_that_locked_a_ready_row_wakes_the_poll_that_skipped_it(
    postgres_alias: str, database_access: None
) -> None:
    """A claim skips a locked row (SKIP LOCKED) even when it is ready. The lock's holder may end with a
    refusal that writes nothing (here a repeated cancel request): it still wakes the pollers, or the
    skipped row would wait out the whole poll timeout."""
    waiting, writing = (
        DjangoStore(postgres_alias, SystemClock(), pool_size=2),
        DjangoStore(postgres_alias, SystemClock(), pool_size=2),
    )
    waiting.reset()
    try:
        await writing.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
        [handle] = await writing.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        await handle.record_wait("x", spi.WakeOnField("x"), _event("e1", spi.EventKind.INPUT_WAITING))
        await handle.finish(spi.Suspended(frozenset({"x"})))
        assert await writing.request_cancel("e1", "first") == spi.Accepted()
        with psycopg.connect(postgres_url(), autocommit=False) as holder:
            holder.execute("SELECT 1 FROM flowstore_execution WHERE id = 'e1' FOR UPDATE")
            poll = asyncio.ensure_future(waiting.claim_ready(SERVED, "ex", LEASE, 1, timedelta(seconds=30)))
            await asyncio.sleep(0.3)  # real time: the poll asks, skips the locked row and blocks
            assert not poll.done()
            holder.rollback()  # the lock goes; nothing was written, so nothing woke the poll
        assert await writing.request_cancel("e1", "again") == spi.AlreadyRequested()
        claimed = await asyncio.wait_for(poll, 10)
        assert [c.state.execution_id for c in claimed] == ["e1"]
    finally:
        await waiting.aclose()
        await writing.aclose()


@pytest.mark.postgres
async def test_a_delivery_that_waited_out_another_write_claims_nothing(
    postgres_alias: str, database_access: None
) -> None:
    """`signal_and_claim` in one statement reads the record from the statement's snapshot: a write that
    committed while it waited for the row's lock is not in it, so it delivers without claiming (and wakes
    the pollers, which claim the row with its whole record)."""
    store = DjangoStore(postgres_alias, SystemClock(), pool_size=2)
    store.reset()
    try:
        await store.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
        [handle] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        await handle.record_wait("go", spi.WakeOnField("go"), _event("e1", spi.EventKind.INPUT_WAITING))
        await handle.finish(spi.Suspended(frozenset({"go"})))
        received = _event("e1", spi.EventKind.INPUT_RECEIVED)
        with psycopg.connect(postgres_url(), autocommit=False) as holder:
            holder.execute("UPDATE flowstore_execution SET updated = updated WHERE id = 'e1'")
            delivery = asyncio.ensure_future(
                store.signal_and_claim(
                    "e1", "go", spi.FieldData.of(1, "int"), received, executor_id="here", lease=LEASE
                )
            )
            await asyncio.sleep(0.3)  # real time: the statement took its snapshot and waits for the lock
            assert not delivery.done()
            holder.commit()
        assert await asyncio.wait_for(delivery, 10) == (spi.Delivered(), None)
        [claimed] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
        assert (claimed.state.execution_id, claimed.satisfied) == ("e1", {"go"})
    finally:
        await store.aclose()


async def test_a_closed_store_answers_store_errors_and_frees_blocked_callers(
    sqlite_alias: str, database_access: None
) -> None:
    store = DjangoStore(sqlite_alias, ManualClock(), pool_size=2)
    store.reset()
    poll = asyncio.ensure_future(store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(hours=1)))
    give_up = time.monotonic() + 10
    while store.clock.pending_sleeps() < 1:  # type: ignore[attr-defined]
        assert time.monotonic() < give_up, "the poll never blocked"
        await asyncio.sleep(0.001)
    await store.aclose()
    with pytest.raises(spi.FlowStoreError):
        await asyncio.wait_for(poll, 10)
    with pytest.raises(spi.FlowStoreError):
        await store.get_execution("e1")


def test_postgres_cases_skip_or_fail_as_ci_says(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.store import django_support

    monkeypatch.setattr(django_support, "POSTGRES_SERVER", "postgresql://postgres@127.0.0.1:1")
    monkeypatch.delenv("FLOWDECK_REQUIRE_POSTGRES", raising=False)
    with pytest.raises(pytest.skip.Exception):
        django_support.require_postgres()
    monkeypatch.setenv("FLOWDECK_REQUIRE_POSTGRES", "1")
    with pytest.raises(pytest.fail.Exception):
        django_support.require_postgres()


async def test_an_id_prefix_search_is_case_sensitive(backend_alias: str) -> None:
    """As `str.startswith` (the memory store): SQLite's LIKE would also match other cases."""
    store = DjangoStore(backend_alias, ManualClock(), pool_size=2)
    store.reset()
    try:
        for eid in ("ab1", "AB2", "ab%3", "abc_4", "b5"):
            await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
        found = {p: await store.list_executions(None, id_prefix=p) for p in ("ab", "AB", "ab%", "abc_")}
        assert {p: sorted(s.execution_id for s in page.items) for p, page in found.items()} == {
            "ab": ["ab%3", "ab1", "abc_4"],
            "AB": ["AB2"],
            "ab%": ["ab%3"],
            "abc_": ["abc_4"],
        }
        assert {p: page.total for p, page in found.items()} == {"ab": 3, "AB": 1, "ab%": 1, "abc_": 1}
        # the same prefixes on a wait-kind search, whose total is counted from the wait rows
        for eid in ("ab1", "AB2"):
            [handle] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
            assert handle.state.execution_id == eid  # oldest first (creation order at one instant)
            await handle.record_wait("go", spi.WakeOnField("go"), _event(eid))
            await handle.finish(spi.Suspended(frozenset({"go"})))
        waiting = {
            p: await store.list_executions(None, spi.ExecutionFilter.WaitingForInput("go"), id_prefix=p)
            for p in ("ab", "AB", "b")
        }
        assert {p: (page.total, len(page.items)) for p, page in waiting.items()} == {
            "ab": (1, 1),
            "AB": (1, 1),
            "b": (0, 0),
        }
    finally:
        await store.aclose()


@pytest.mark.postgres
async def test_an_attempt_suspended_on_an_unanswered_input_wakes_nobody(
    postgres_alias: str, database_access: None
) -> None:
    """No herd: pollers wake for an ending that can make a row ready (or sets a deadline), not for one
    that leaves it waiting on an input nobody gave."""
    clock = ManualClock()
    store = DjangoStore(postgres_alias, clock, pool_size=2)
    store.reset()
    try:
        endings = {
            "input": ({"x": spi.WakeOnField("x")}, False),
            "answered": ({"y": spi.WakeOnField("y")}, True),
            "sleep": ({"nap": spi.WakeAt(clock.now() + timedelta(hours=1))}, True),
            "nothing": ({}, True),
        }
        woke = {}
        for eid, (waits, _) in endings.items():
            await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
            [handle] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
            for path, wake in waits.items():
                assert await handle.record_wait(path, wake, _event(eid, spi.EventKind.INPUT_WAITING)) is (
                    spi.WriteOutcome.APPLIED
                )
            if eid == "answered":
                assert (
                    await store.signal(eid, "y", spi.FieldData.of(1, "int"), _event(eid)) == spi.Delivered()
                )
            before = store.hub.generation
            assert await handle.finish(spi.Suspended(frozenset(waits))) is spi.StatusOutcome.APPLIED
            woke[eid] = store.hub.generation != before
            if eid == "answered":  # claim and park it again so the next case's claim finds only its own row
                [again] = await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
                await again.finish(spi.Terminal(spi.Completed(), _event(eid, spi.EventKind.COMPLETED)))
            if eid == "nothing":
                continue
        assert woke == {eid: expected for eid, (_, expected) in endings.items()}
    finally:
        await store.aclose()


@pytest.mark.postgres
def test_no_index_holds_a_column_every_node_write_changes(postgres_alias: str, database_access: None) -> None:
    """A node's write changes the execution row's `updated` and `last_seq`; while no index names either
    (in its columns, expressions or predicate), PostgreSQL makes that write a HOT update, which touches
    no index. One index on `updated` made every write insert into every index of the table."""
    with connections[postgres_alias].cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x"
            " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
            " WHERE t.relname = 'flowstore_execution'"
        )
        definitions = dict(cursor.fetchall())
    assert len(definitions) > 5, definitions  # the table's indexes were read
    holding = {name: d for name, d in definitions.items() if re.search(r"\b(updated|last_seq)\b", d)}
    assert holding == {}, holding
