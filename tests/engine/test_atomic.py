"""Exactly-once database steps (`atomic=True`): the body's writes and the node's record in one transaction.

On the Django store (SQLite and PostgreSQL) the body's ORM rows commit if and only if the node is recorded:
a body that raises, a retried try, a claim that lapsed before the record, or a record refused as already
made all leave no row. The memory store has no transaction to share: its body runs, then the record is
written (its effects stand whatever the record's answer), which these cases show too.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connections

from examples.fulfilment.models import Posting
from flowdeck.engine import values
from flowdeck.engine.errors import FlowAtomicRefused, FlowDomainError, FlowRetry
from flowdeck.engine.flow import Flow, Loop
from flowdeck.engine.schedule import Schedule
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.memory import MemoryStore
from tests.engine.interp_support import LEASE, World
from tests.store.django_support import database_access, postgres_alias, sqlite_alias  # noqa: F401


@dataclass
class Ledger:
    """Where a body's rows go: the store's database (through the ORM on the store's alias), or a list for
    the memory store, which has no database."""

    alias: str | None
    kept: list[tuple[str, str]] = field(default_factory=list)

    def post(self, ctx: Any) -> None:
        """A row for the node whose idempotency key (`<execution id>/<path>`) `ctx.key` is."""
        execution_id, _, node = ctx.key.partition("/")
        if self.alias is None:
            self.kept.append((execution_id, node))
        else:
            Posting.objects.using(self.alias).create(execution_id=execution_id, node=node)

    async def rows(self, execution_id: str) -> list[str]:
        """The nodes with a row for `execution_id`, in the order they were written (committed ones)."""
        if self.alias is None:
            return [node for eid, node in self.kept if eid == execution_id]
        alias = self.alias

        def read() -> list[str]:
            try:
                found = Posting.objects.using(alias).filter(execution_id=execution_id)
                return list(found.values_list("node", flat=True))
            finally:
                connections[alias].close()  # this thread's connection: none left for the collector

        return await asyncio.to_thread(read)


DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
# A body can fail on a database only where there is one: such a test runs on these, not on the memory store.
on_databases = pytest.mark.parametrize("backend", DATABASES, indirect=True)


@pytest.fixture(params=["memory", *DATABASES])
def backend(request: pytest.FixtureRequest) -> str | None:
    if request.param == "memory":
        return None
    request.getfixturevalue("database_access")
    return str(request.getfixturevalue(f"{request.param}_alias"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def ledger(backend: str | None) -> Ledger:
    if backend is not None:
        Posting.objects.using(backend).all().delete()
    return Ledger(backend)


@pytest.fixture
async def world(backend: str | None, clock: ManualClock) -> Any:
    if backend is None:
        yield World(MemoryStore(clock), clock)
        return
    store = DjangoStore(backend, clock)
    store.reset()
    try:
        yield World(store, clock)
    finally:
        await store.aclose()


def transactional(ledger: Ledger) -> bool:
    return ledger.alias is not None


# ------------------------------------------------------------------------------------------ definition


def test_atomic_is_a_knob_of_sync_steps_and_outputs() -> None:
    flow = Flow.init("a").step("s", lambda ctx: None, atomic=True).output("o", lambda ctx: 1, atomic=True)
    assert [node.knobs.atomic for node in flow.nodes] == [True, True]
    assert not Flow.init("b").step("s", lambda ctx: None).nodes[0].knobs.atomic


async def _async_body(ctx: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("declare", "reason"),
    [
        (lambda f: f.step("s", _async_body, atomic=True), "needs a sync body"),
        (lambda f: f.output("o", lambda c: 1, atomic=True, timeout=timedelta(seconds=1)), "takes no timeout"),
        (lambda f: f.step("s", lambda c: None, atomic=True, at_most_once=True), "needs no at_most_once"),
        (lambda f: f.loop("l", lambda c: Loop.done(1), atomic=True), "is for .step(...) and .output(...)"),
        (lambda f: f.dispatch("d", atomic=True), "is for .step(...) and .output(...)"),
    ],
)
def test_atomic_is_refused_where_one_transaction_cannot_hold(
    declare: Callable[[Flow], Any], reason: str
) -> None:
    with pytest.raises(FlowAtomicRefused, match=re.escape(reason)) as refused:
        declare(Flow.init("a"))
    assert refused.value.reason.startswith(reason)


def test_atomic_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="atomic must be a bool"):
        Flow.init("a").step("s", lambda ctx: None, atomic="yes")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ attempts


async def test_the_body_row_and_the_record_land_together(world: World, ledger: Ledger) -> None:
    def total(ctx: Any) -> int:
        ledger.post(ctx)
        return 42

    flow = Flow.init("atomic-ok").step("post", ledger.post, atomic=True).output("total", total, atomic=True)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "completed", report
    assert sorted(await ledger.rows(eid)) == ["post", "total"]
    assert (await world.fields(eid))["total"] == 42
    completed = [e.data["step_name"] for e in await world.events(eid, spi.EventKind.STEP_COMPLETED)]
    assert completed == ["post", "total"]


async def test_a_body_that_raises_leaves_no_row_and_its_failure_recorded(
    world: World, ledger: Ledger
) -> None:
    def post_then_fail(ctx: Any) -> None:
        ledger.post(ctx)
        raise ValueError("the ledger says no")

    flow = Flow.init("atomic-raises").step("post", post_then_fail, atomic=True)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome in ("failed", "stopped"), report
    failed = await world.events(eid, spi.EventKind.STEP_FAILED)
    assert [e.data["step_name"] for e in failed] == ["post"]
    assert "the ledger says no" in failed[0].data["error"]
    assert await world.events(eid, spi.EventKind.STEP_COMPLETED) == []
    assert await ledger.rows(eid) == ([] if transactional(ledger) else ["post"])


async def test_each_try_is_its_own_transaction(world: World, ledger: Ledger) -> None:
    tries: list[int] = []

    def flaky(ctx: Any) -> str:
        tries.append(ctx.attempt)
        ledger.post(ctx)
        if len(tries) < 3:
            raise FlowRetry("not yet")
        return "posted"

    retry = Schedule.fixed(timedelta(0)).take(5)
    flow = Flow.init("atomic-retry").output("post", flaky, atomic=True, retry=retry)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "completed", report
    assert tries == [0, 1, 2]
    assert await ledger.rows(eid) == (["post"] if transactional(ledger) else ["post"] * 3)
    assert len(await world.events(eid, spi.EventKind.STEP_RETRIED)) == 2
    assert (await world.fields(eid))["post"] == "posted"


async def test_a_claim_lapsed_before_the_record_leaves_neither(
    world: World, ledger: Ledger, clock: ManualClock
) -> None:
    runs: list[str] = []

    def slow(ctx: Any) -> None:
        ledger.post(ctx)
        runs.append(ctx.key)
        if len(runs) == 1:  # the first try outlives its lease: another worker may hold the row by now
            clock.step_wall(LEASE + timedelta(seconds=1))

    flow = Flow.init("atomic-lapsed").step("post", slow, atomic=True)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "claim-lost", report
    assert await world.events(eid, spi.EventKind.STEP_COMPLETED) == []
    assert await ledger.rows(eid) == ([] if transactional(ledger) else ["post"])
    # the next claim runs it again, once: one row in all on the Django store
    report = await world.attempt(flow, eid)
    assert report.outcome == "completed", report
    assert await ledger.rows(eid) == (["post"] if transactional(ledger) else ["post", "post"])


async def test_a_replay_does_not_run_a_recorded_atomic_node(world: World, ledger: Ledger) -> None:
    flow = (
        Flow.init("atomic-replay")
        .step("post", ledger.post, atomic=True)
        .input("go", bool)
        .step("after", ledger.post)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    received = spi.Event(
        spi.EventKind.INPUT_RECEIVED, flow.name, eid, world.clock.now(), {"input_name": "go"}
    )
    await world.store.signal(eid, "go", values.encode("go", True, bool), received)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await ledger.rows(eid) == ["post", "after"]


# ------------------------------------------------------------------------------------------ the store


async def _claimed(world: World, eid: str) -> spi.Claimed:
    claims = await world.store.claim_ready(frozenset({("atomic-store", "")}), "ex-1", LEASE, 10, timedelta(0))
    [claimed] = [c for c in claims if c.state.execution_id == eid]
    return claimed


def _completion(world: World, eid: str, path: str) -> Callable[[Any], spi.Completion]:
    def complete(result: Any) -> spi.Completion:
        event = spi.Event(
            spi.EventKind.STEP_COMPLETED, "atomic-store", eid, world.clock.now(), {"step_name": path}
        )
        return spi.Completion(None, [event])

    return complete


async def _started(world: World) -> str:
    created = spi.Event(spi.EventKind.CREATED, "atomic-store", "s1", world.clock.now(), {})
    assert await world.store.create_execution_if_absent("s1", "atomic-store", "", spi.Running(), created)
    return "s1"


class _Ctx:
    def __init__(self, eid: str, path: str) -> None:
        self.key = f"{eid}/{path}"


async def test_a_claim_already_lost_runs_no_body(world: World, ledger: Ledger, clock: ManualClock) -> None:
    eid = await _started(world)
    claimed = await _claimed(world, eid)
    await clock.advance(LEASE + timedelta(seconds=1))
    ran: list[bool] = []

    def body() -> None:
        ran.append(True)
        ledger.post(_Ctx(eid, "p"))

    outcome, _ = await claimed.record_atomically("p", body, _completion(world, eid, "p"))
    assert outcome is spi.ProgressOutcome.CLAIM_LOST
    assert await ledger.rows(eid) == ([] if transactional(ledger) else ["p"])
    assert ran == ([] if transactional(ledger) else [True])


async def test_a_record_already_made_rolls_the_body_back(world: World, ledger: Ledger) -> None:
    eid = await _started(world)
    claimed = await _claimed(world, eid)
    mark = spi.Event(spi.EventKind.STEP_COMPLETED, "atomic-store", eid, world.clock.now(), {"step_name": "p"})
    assert await claimed.record_progress("p", None, mark) is spi.ProgressOutcome.RECORDED
    outcome, _ = await claimed.record_atomically(
        "p", lambda: ledger.post(_Ctx(eid, "p")), _completion(world, eid, "p")
    )
    assert outcome is spi.ProgressOutcome.ALREADY_RECORDED
    assert await ledger.rows(eid) == ([] if transactional(ledger) else ["p"])
    history = (await world.store.get_history(eid)).events
    assert [e.kind for e in history].count(spi.EventKind.STEP_COMPLETED) == 1


@on_databases
async def test_a_database_error_in_the_body_is_the_body_s_own(world: World, ledger: Ledger) -> None:
    """A user's IntegrityError is not the store failing: it leaves as it came, and nothing is written."""
    eid = await _started(world)
    claimed = await _claimed(world, eid)

    def body() -> None:
        ledger.post(_Ctx(eid, "p"))
        Posting.objects.using(ledger.alias).create(id=Posting.objects.using(ledger.alias).get().id, node="x")

    with pytest.raises(IntegrityError):
        await claimed.record_atomically("p", body, _completion(world, eid, "p"))
    assert await ledger.rows(eid) == []
    claimed_again = claimed  # the handle still holds the claim: an ordinary write goes through
    done = spi.Event(spi.EventKind.STEP_COMPLETED, "atomic-store", eid, world.clock.now(), {"step_name": "q"})
    assert await claimed_again.record_progress("q", None, done) is spi.ProgressOutcome.RECORDED


# ------------------------------------------------------------------------------------------ unwinding

UNDONE: list[Any] = []


class OutOfStock(FlowDomainError):
    """A domain failure: the flow unwinds."""


def _unpost(arg: Any) -> None:
    UNDONE.append(("undo", arg))


async def test_an_atomic_step_s_undos_and_compensation_run_when_a_later_node_fails(
    world: World, ledger: Ledger
) -> None:
    """The undo notes ride in the atomic record; the unwind runs them and `compensate=` as ordinary bodies."""
    UNDONE.clear()

    def post(ctx: Any) -> None:
        ledger.post(ctx)
        ctx.undo(_unpost, "posting")

    def fail(ctx: Any) -> None:
        raise OutOfStock("out of stock")

    flow = (
        Flow.init("atomic-unwind")
        .step("post", post, atomic=True, compensate=lambda ctx: UNDONE.append(("compensate", None)))
        .step("ship", fail)
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    while report.outcome not in ("failed", "stopped", "completed"):
        report = await world.attempt(flow, eid)
    assert report.outcome == "failed", report
    assert sorted(UNDONE, key=str) == [("compensate", None), ("undo", "posting")]
    assert await ledger.rows(eid) == ["post"]
    assert "post#undo" in await world.fields(eid)
    assert [e.data["node"] for e in await world.events(eid, spi.EventKind.UNDO_NOTED)] == ["post"]


@on_databases
async def test_a_body_that_swallows_a_database_error_fails_with_advice(world: World, ledger: Ledger) -> None:
    alias = ledger.alias

    def swallow(ctx: Any) -> None:
        ledger.post(ctx)
        with contextlib.suppress(IntegrityError):  # Django marks the transaction for rollback
            Posting.objects.using(alias).create(id=Posting.objects.using(alias).get().id, node="x")

    flow = Flow.init("atomic-swallow").step("post", swallow, atomic=True)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "stopped", report
    assert "savepoint" in report.detail
    assert await ledger.rows(eid) == []
