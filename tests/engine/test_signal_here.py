"""Delivering an input here (`engine.executions.signal` in a process whose workers run): when the input
makes the execution ready, the delivery claims it for this engine in the same store write and its workers
continue it at once, with no poll; a crash leaves an ordinary lapsing claim; an engine without running
workers delivers the plain way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from flowdeck.engine import errors
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import (
    LEASE,
    DjangoHandOuts,
    MemoryHandOuts,
    advance,
    make_engine,
    released,
    shape,
    until,
    waiting_for,
)


def listener() -> Flow:
    return Flow.init("listener").input("go", int).output("after", lambda ctx: ctx.go + 1, type=int)


def hanging_after_input(entered: asyncio.Event, release: asyncio.Event) -> Flow:
    async def wait(ctx: object) -> str:
        entered.set()
        await release.wait()
        return "done"

    return (
        Flow.init("hanging")
        .input("go", int)
        .output("slow", wait, type=str)
        .output("after", lambda ctx: ctx.slow + "!", type=str)
    )


def busy(entered: asyncio.Event, release: asyncio.Event) -> Flow:
    async def wait(ctx: object) -> None:
        entered.set()
        await release.wait()

    return Flow.init("busy").step("hold", wait)


def claimers(events: Sequence[spi.Event]) -> list[str]:
    return [e.data["executor_id"] for e in events if e.kind == spi.EventKind.EXECUTION_CLAIMED]


@pytest.fixture
async def handouts(
    store_alias: str | None, clock: ManualClock
) -> AsyncIterator[MemoryHandOuts | DjangoHandOuts]:
    if store_alias is None:
        yield MemoryHandOuts(clock)
        return
    django_store = DjangoHandOuts(store_alias, clock)
    django_store.reset()
    try:
        yield django_store
    finally:
        await django_store.aclose()


async def test_signal_here_continues_the_execution_without_a_poll(
    handouts: MemoryHandOuts | DjangoHandOuts, clock: ManualClock
) -> None:
    store = handouts
    async with make_engine(store, clock, [listener()]) as engine:
        eid = await engine.workflows.start("listener")
        await until(store, eid, waiting_for("go"))
        await engine.executions.signal(eid, "go", 41)
        assert engine.health().claims_held in ((eid,), ())  # adopted at once: held, or already done
        assert (await until(store, eid)).status == spi.Completed()
        await settle()
    assert store.handed == [eid], "only the start's attempt came from a poll"
    assert (await store.get_field(eid, "after")).decode() == 42
    assert claimers((await store.get_history(eid)).events) == [engine.executor_id] * 2


async def test_signal_here_runs_while_every_slot_is_busy(store: spi.FlowStore, clock: ManualClock) -> None:
    """The one slot holds a hanging attempt, so the claim loop asks for nothing: only the delivery itself
    can have handed the execution to the workers."""
    entered, release = asyncio.Event(), asyncio.Event()
    async with make_engine(store, clock, [listener(), busy(entered, release)], batch_size=1) as engine:
        eid = await engine.workflows.start("listener")
        await until(store, eid, waiting_for("go"))
        holder = await engine.workflows.start("busy")
        await entered.wait()
        await engine.executions.signal(eid, "go", 1)
        assert (await until(store, eid)).status == spi.Completed()
        assert (await store.get_execution(holder)).executor == engine.executor_id
        release.set()
        assert (await until(store, holder)).status == spi.Completed()


async def test_signal_here_history_has_the_shape_of_a_queued_delivery(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    api = make_engine(store, clock, [listener()])  # its workers never run: it delivers the plain way
    await api.register("listener", listener())
    async with make_engine(store, clock, [listener()]) as engine:
        queued = await engine.workflows.start("listener")
        here = await engine.workflows.start("listener")
        for eid in (queued, here):
            await until(store, eid, waiting_for("go"))
        await api.executions.signal(queued, "go", 1)
        await until(store, queued)
        await engine.executions.signal(here, "go", 1)
        await until(store, here)
    queued_history = (await store.get_history(queued)).events
    here_history = (await store.get_history(here)).events
    assert shape(here_history) == shape(queued_history)
    assert [e.kind.value for e in here_history[-8:]] == [
        "InputReceived",
        "ExecutionClaimed",
        "ExecutionResumed",
        "InputDischarged",
        "StepStarted",
        "StepCompleted",
        "ExecutionReleased",
        "Completed",
    ]
    assert claimers(here_history) == claimers(queued_history) == [engine.executor_id] * 2
    assert await store.get_all_fields(here) == await store.get_all_fields(queued)


async def test_signal_here_refusals_write_nothing(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [listener()]) as engine:
        eid = await engine.workflows.start("listener")
        parked = await until(store, eid, waiting_for("go"))
        await released(engine)
        history, fields = await store.get_history(eid), await store.get_all_fields(eid)
        with pytest.raises(errors.FlowInputError):
            await engine.executions.signal(eid, "nope", 1)
        with pytest.raises(errors.FlowInputError):
            await engine.executions.signal(eid, "go", {"not": "an int"})
        with pytest.raises(errors.FlowExecutionNotFound):
            await engine.executions.signal("missing", "go", 1)
        assert (await store.get_execution(eid), await store.get_history(eid)) == (parked, history)
        assert await store.get_all_fields(eid) == fields
        assert engine.health().claims_held == ()
        await engine.executions.signal(eid, "go", 1)
        done = await until(store, eid)
        with pytest.raises(errors.FlowExecutionTerminal):
            await engine.executions.signal(eid, "go", 2)
        assert await store.get_execution(eid) == done
    assert await store.get_execution("missing") is None


async def test_signal_here_already_delivered_writes_nothing(store: spi.FlowStore, clock: ManualClock) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    async with make_engine(store, clock, [hanging_after_input(entered, release)]) as engine:
        eid = await engine.workflows.start("hanging")
        await until(store, eid, waiting_for("go"))
        await engine.executions.signal(eid, "go", 1)
        await entered.wait()
        before = (await store.get_execution(eid), (await store.get_history(eid)).events)
        with pytest.raises(errors.FlowAlreadyDelivered):
            await engine.executions.signal(eid, "go", 2)
        assert (await store.get_execution(eid), (await store.get_history(eid)).events) == before
        release.set()
        assert (await until(store, eid)).status == spi.Completed()
    assert (await store.get_field(eid, "go")).decode() == 1


async def test_a_crash_after_a_claiming_signal_is_recovered_after_the_lease(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """The delivering engine dies mid-attempt (leaves with no grace, writing nothing more); the claim its
    delivery took lapses like any other, and another engine finishes the execution."""
    entered, release = asyncio.Event(), asyncio.Event()
    flow = hanging_after_input(entered, release)
    async with make_engine(store, clock, [flow]) as doomed:
        eid = await doomed.workflows.start("hanging")
        await until(store, eid, waiting_for("go"))
        await doomed.executions.signal(eid, "go", 1)
        await entered.wait()
        assert doomed.health().claims_held == (eid,)
    state = await store.get_execution(eid)
    assert (state.executor, state.claim_expiry) == (doomed.executor_id, clock.now() + LEASE)
    release.set()
    async with make_engine(store, clock, [flow]) as survivor:
        await advance(clock, LEASE)  # its first poll finds the row still claimed, and waits out the lease
        assert (await until(store, eid)).status == spi.Completed()
    history = (await store.get_history(eid)).events
    # a claim is recorded with an attempt's first write: the attempt that parked on the input, the
    # delivery's attempt (its first write is the body's start, made before the body) and the survivor's
    assert claimers(history) == [doomed.executor_id, doomed.executor_id, survivor.executor_id]
    assert (await store.get_field(eid, "after")).decode() == "done!"


async def test_signal_without_running_workers_is_a_plain_delivery(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """An engine whose workers are not running (an API process) delivers without claiming; workers
    elsewhere continue the execution."""
    async with make_engine(store, clock, [listener()]) as first:
        eid = await first.workflows.start("listener")
        await until(store, eid, waiting_for("go"))
    api = make_engine(store, clock, [listener()])
    await api.register("listener", listener())
    await api.executions.signal(eid, "go", 1)
    state = await store.get_execution(eid)
    assert (state.status, state.executor, state.claim_token) == (spi.Running(), None, None)
    async with make_engine(store, clock, [listener()]) as worker:
        assert (await until(store, eid)).status == spi.Completed()
    assert claimers((await store.get_history(eid)).events) == [first.executor_id, worker.executor_id]


class SlowSignal(MemoryStore):
    """A real memory store whose claiming deliveries wait to be let through."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.entered, self.go = asyncio.Event(), asyncio.Event()

    async def signal_and_claim(self, *args: object, **kwargs: object):  # type: ignore[override]
        self.entered.set()
        await self.go.wait()
        return await super().signal_and_claim(*args, **kwargs)  # type: ignore[arg-type]


async def test_signal_here_racing_the_workers_stopping_hands_the_claim_back(clock: ManualClock) -> None:
    """The workers begin stopping while the delivery claims the row: the signal hands the claim back at
    once, wait rows kept, so the execution need not wait out a lease to be continued elsewhere."""
    store = SlowSignal(clock)
    engine = make_engine(store, clock, [listener()])
    await engine.__aenter__()
    eid = await engine.workflows.start("listener")
    await until(store, eid, waiting_for("go"))
    signal = asyncio.ensure_future(engine.executions.signal(eid, "go", 1))
    await store.entered.wait()
    await engine.__aexit__(None, None, None)
    store.go.set()
    await signal
    state = await store.get_execution(eid)
    assert (state.status, state.executor, state.claim_token, set(state.waits)) == (
        spi.Running(),
        None,
        None,
        {"go"},
    )
    assert engine.health().claims_held == ()
    async with make_engine(store, clock, [listener()]) as worker:
        assert (await until(store, eid)).status == spi.Completed()
    assert claimers(store.history(eid)) == [engine.executor_id, worker.executor_id]
