"""Group commit on PostgreSQL: writes that arrive together are committed together, and each keeps its own
meaning (its own claim judged, its own refusal, its own error)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from flowdeck.store import concurrency, spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.group_commit import GroupCommit
from flowdeck.store.django.postgres import PostgresWrites
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import database_access, postgres_alias, postgres_url

__all__ = ["database_access", "postgres_alias"]

pytestmark = pytest.mark.postgres

WF1 = "wf1"
SERVED = frozenset({(WF1, "")})
LEASE = timedelta(seconds=30)


def _event(eid: str, kind: spi.EventKind = spi.EventKind.CREATED) -> spi.Event:
    return spi.Event(kind, WF1, eid, ManualClock().now(), {})


def _mark(eid: str, path: str) -> spi.Event:
    return spi.Event(spi.EventKind.STEP_COMPLETED, WF1, eid, ManualClock().now(), {"step_name": path})


@pytest.fixture
def store(postgres_alias: str, database_access: None) -> Iterator[DjangoStore]:
    store = DjangoStore(postgres_alias, ManualClock(), pool_size=2)
    store.reset()
    yield store
    store.close()


async def _claimed(store: DjangoStore, ids: list[str]) -> dict[str, spi.Claimed]:
    for eid in ids:
        assert await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
    handles = await store.claim_ready(SERVED, "ex", LEASE, len(ids), timedelta(0))
    return {handle.state.execution_id: handle for handle in handles}


def _writers(store: DjangoStore) -> dict[asyncio.AbstractEventLoop, GroupCommit]:
    """The store's group commits, one per event loop (PostgreSQL's writer seam holds them)."""
    writes = store._writes
    assert isinstance(writes, PostgresWrites)
    return writes.writers


def _writer(store: DjangoStore) -> GroupCommit:
    return _writers(store)[asyncio.get_running_loop()]


async def _hold_the_connection(store: DjangoStore) -> asyncio.Future[Any]:
    """Keep a one-connection writer busy for a moment, so the writes sent meanwhile queue up together."""
    busy = asyncio.ensure_future(_writer(store).run("hold", "SELECT pg_sleep(0.2)", {}))
    await asyncio.sleep(0)  # it takes the free connection
    return busy


async def test_writes_that_arrive_together_share_one_transaction(store_one_writer: DjangoStore) -> None:
    store = store_one_writer
    ids = [f"e{i:02d}" for i in range(40)]
    handles = await _claimed(store, ids)
    writer = _writer(store)  # the creates went through it already
    busy = await _hold_the_connection(store)
    writes, transactions = writer.writes, writer.transactions

    outcomes = await asyncio.gather(
        *(handles[eid].record_progress("a", None, _mark(eid, "a")) for eid in ids)
    )
    await busy

    assert outcomes == [spi.ProgressOutcome.RECORDED] * len(ids)
    assert writer.writes - writes == len(ids)
    assert writer.transactions - transactions == 1  # all forty together (the hold was counted before)
    for eid in ids:
        history = await store.get_history(eid)
        assert [e.kind for e in history.events] == [spi.EventKind.CREATED, spi.EventKind.STEP_COMPLETED]


async def test_a_lone_write_on_a_free_connection_goes_at_once(store_one_writer: DjangoStore) -> None:
    store = store_one_writer
    [handle] = (await _claimed(store, ["a"])).values()
    writer = _writer(store)
    transactions = writer.transactions

    assert await handle.record_progress("x", None, _mark("a", "x")) is spi.ProgressOutcome.RECORDED

    assert writer.transactions - transactions == 1
    assert len(writer._free) == 1  # given back for the next caller


async def test_in_one_batch_a_lost_claim_and_a_refused_gate_change_only_themselves(
    store_one_writer: DjangoStore,
) -> None:
    store = store_one_writer
    first = await _claimed(store, ["a", "b"])
    assert await first["b"].record_progress("done", None, _mark("b", "done")) is spi.ProgressOutcome.RECORDED
    await store.clock.advance(LEASE.total_seconds() + 1)  # type: ignore[attr-defined]
    again = {h.state.execution_id: h for h in await store.claim_ready(SERVED, "ex2", LEASE, 2, timedelta(0))}
    writer = _writer(store)
    busy = await _hold_the_connection(store)
    transactions = writer.transactions

    stale, fresh, gated = await asyncio.gather(
        first["a"].record_progress("x", None, _mark("a", "x")),
        again["a"].record_progress("y", None, _mark("a", "y")),
        again["b"].record_progress("done", None, _mark("b", "done")),
    )
    await busy

    assert (stale, fresh, gated) == (
        spi.ProgressOutcome.CLAIM_LOST,
        spi.ProgressOutcome.RECORDED,
        spi.ProgressOutcome.ALREADY_RECORDED,
    )
    assert writer.transactions - transactions == 1  # the three together (the hold was counted before)
    kinds = [(e.kind, e.data.get("step_name")) for e in (await store.get_history("a")).events]
    assert kinds == [(spi.EventKind.CREATED, None), (spi.EventKind.STEP_COMPLETED, "y")]
    assert len((await store.get_history("b")).events) == 2


# ------------------------------------------------------------------------------------ the writer alone


@pytest.fixture
def probe_table(postgres_alias: str, database_access: None) -> Iterator[str]:
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS group_commit_probe")
        conn.execute("CREATE TABLE group_commit_probe (id int PRIMARY KEY)")
    yield "group_commit_probe"
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute("DROP TABLE group_commit_probe")


def _probe_ids() -> list[int]:
    with psycopg.connect(postgres_url()) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM group_commit_probe ORDER BY id")]


def _params() -> dict[str, Any]:
    return {"conninfo": postgres_url(), "application_name": "flowdeck-writer-test"}


INSERT = "INSERT INTO group_commit_probe (id) VALUES (%(id)s) RETURNING id"


async def test_an_error_in_a_batch_reaches_its_own_write_and_the_others_land(probe_table: str) -> None:
    writer = GroupCommit(_params(), connections=1)
    try:
        results = await asyncio.gather(
            writer.run("one", INSERT, {"id": 1}),
            writer.run("two", INSERT, {"id": 2}),
            writer.run("broken", "SELECT 1 / %(zero)s", {"zero": 0}),
            writer.run("three", INSERT, {"id": 3}),
            return_exceptions=True,
        )
    finally:
        await writer.aclose()

    assert [results[0], results[1], results[3]] == [(1,), (2,), (3,)]
    failure = results[2]
    assert isinstance(failure, spi.FlowStoreError)
    assert "broken" in str(failure)
    assert not failure.retryable
    assert isinstance(failure.__cause__, psycopg.errors.DivisionByZero)
    assert _probe_ids() == [1, 2, 3]
    assert writer.writes == 4


async def test_a_lost_connection_fails_its_write_as_retryable_and_the_next_reconnects(
    probe_table: str,
) -> None:
    writer = GroupCommit(_params(), connections=1)
    try:
        assert await writer.run("first", INSERT, {"id": 1}) == (1,)
        with psycopg.connect(postgres_url(), autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'flowdeck-writer-test'"
            ).fetchall()
        assert killed == [(True,)]
        with pytest.raises(spi.FlowStoreError) as lost:
            await writer.run("second", INSERT, {"id": 2})
        assert lost.value.retryable
        assert await writer.run("third", INSERT, {"id": 3}) == (3,)
    finally:
        await writer.aclose()
    assert _probe_ids() == [1, 3]


async def test_a_closed_writer_fails_what_is_still_queued(probe_table: str) -> None:
    writer = GroupCommit(_params(), connections=1)
    await writer.aclose()
    queued = asyncio.ensure_future(writer.run("late", INSERT, {"id": 9}))
    await asyncio.sleep(0)
    await writer.aclose()
    with pytest.raises(spi.FlowStoreError):
        await queued
    assert _probe_ids() == []


def test_each_event_loop_gets_its_own_writer(store: DjangoStore) -> None:
    """A store outlives event loops (one `asyncio.run` after another): async connections belong to the
    loop that opened them, so each loop writes through its own."""

    async def start(eid: str) -> GroupCommit:
        assert await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
        return _writer(store)

    first = asyncio.run(start("one"))
    second = asyncio.run(start("two"))
    assert first is not second

    async def states() -> list[str]:
        return [s.execution_id for s in (await store.list_executions(None, None, 10)).items]

    assert sorted(asyncio.run(states())) == ["one", "two"]
    assert len(_writers(store)) == 1  # the first loop's writer was let go when the second began


def test_a_writer_whose_loop_ended_without_cancelling_it_closes_its_connection_when_collected(
    probe_table: str,
) -> None:
    """pytest-asyncio, for one, closes a loop with its tasks still pending: no `finally` runs."""
    loop = asyncio.new_event_loop()

    async def write() -> GroupCommit:
        writer = GroupCommit(_params(), connections=1)
        assert await writer.run("one", INSERT, {"id": 1}) == (1,)
        return writer

    writer = loop.run_until_complete(write())
    conn = next(iter(writer._open))
    loop.close()
    # Other tests' garbage first, under the suite's filters (Python 3.13 warns of sqlite3 connections the
    # test database leaves to the collector): the strict collection below is this writer's alone.
    gc.collect()
    del writer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.collect()
    assert conn.closed


async def test_claims_are_never_prepared_so_never_planned_generically(store_one_writer: DjangoStore) -> None:
    """The writer connections force generic plans for prepared statements (the writes are key lookups); a
    claim's plan depends on its LIMIT and on how many rows are ready, so it must stay a custom plan."""
    store = store_one_writer
    ids = [f"e{i}" for i in range(8)]
    for eid in ids:
        assert await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
    handles = []
    for _ in range(8):  # past any prepare threshold: each claim and its NEXT_WAKE, eight times
        handles += await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0))
    assert await store.claim_ready(SERVED, "ex", LEASE, 1, timedelta(0)) == []
    for handle in handles:
        assert await handle.record_progress("a", None, _mark(handle.state.execution_id, "a")) is (
            spi.ProgressOutcome.RECORDED
        )

    prepared = await _writer(store).run(
        "probe", "SELECT statement FROM pg_prepared_statements", {}, all_rows=True, prepare=False
    )

    texts = [text for (text,) in prepared]
    assert any("WITH claim AS" in text for text in texts), texts  # the writes were prepared
    assert not any("SKIP LOCKED" in text for text in texts), texts  # the claims were not
    assert (await _writer(store).run("plan mode", "SHOW plan_cache_mode", {})) == ("force_generic_plan",)


@pytest.fixture
def store_one_writer(postgres_alias: str, database_access: None) -> Iterator[DjangoStore]:
    store = DjangoStore(postgres_alias, ManualClock(), pool_size=2, write_connections=1)
    store.reset()
    yield store
    store.close()


# ------------------------------------------------------------------------------------ limited claims


def _keyed(eid: str, key: str) -> spi.Event:
    """A Created event under one running per `key` (what an engine's start of a limited workflow records)."""
    data = concurrency.event_data(concurrency.Limits(key=key, per_key=1))
    return spi.Event(spi.EventKind.CREATED, WF1, eid, ManualClock().now(), data)


async def test_a_limited_claim_and_its_ending_are_one_statement_each(store: DjangoStore) -> None:
    """The claim of a limited version counts the slots in the statement that claims, sent through group
    commit as the unlimited claim is (no transaction of its own on a store thread), and the ending gives
    its slot back in the statement that records it (no second transaction to wake the claimers)."""
    meta = spi.WorkflowMeta(concurrency="1 per key")
    await store.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="", meta=meta))
    for eid, key in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        assert await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _keyed(eid, key))
    writer = _writer(store)
    writes, transactions = writer.writes, writer.transactions

    claimed = {h.state.execution_id: h for h in await store.claim_ready(SERVED, "ex", LEASE, 3, timedelta(0))}

    assert sorted(claimed) == ["a1", "b1"]  # a2 waits for a1's slot
    assert (writer.writes - writes, writer.transactions - transactions) == (1, 1)
    assert [h.state.execution_id for h in await store.claim_ready(SERVED, "ex", LEASE, 3, timedelta(0))] == []

    ending = spi.Event(spi.EventKind.COMPLETED, WF1, "a1", ManualClock().now(), {})
    writes, transactions = writer.writes, writer.transactions
    assert await claimed["a1"].finish(spi.Terminal(spi.Completed(), ending)) is spi.StatusOutcome.APPLIED
    assert (writer.writes - writes, writer.transactions - transactions) == (1, 1)

    again = await store.claim_ready(SERVED, "ex", LEASE, 3, timedelta(0))
    assert [h.state.execution_id for h in again] == ["a2"]
