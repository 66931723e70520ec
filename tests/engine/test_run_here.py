"""Starting an execution to run here (`workflows.start(..., run_here=True)`): created already claimed by the
starting engine, whose workers run it at once with no poll; a crash leaves an ordinary lapsing claim; an
engine without running workers starts it the plain way."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from flowdeck.engine import errors
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import (
    LEASE,
    THREE_NODES,
    MemoryHandOuts,
    advance,
    kinds,
    make_engine,
    released,
    shape,
    until,
)


def chain() -> Flow:
    return (
        Flow.init("chain")
        .output("a", lambda ctx: 1, type=int)
        .step("b", lambda ctx: None)
        .output("c", lambda ctx: ctx.a + 1, type=int)
    )


def hanging(entered: asyncio.Event, release: asyncio.Event) -> Flow:
    async def wait(ctx: object) -> str:
        entered.set()
        await release.wait()
        return "done"

    return (
        Flow.init("hanging")
        .output("first", lambda ctx: 1, type=int)
        .output("slow", wait, type=str)
        .output("after", lambda ctx: ctx.slow + "!", type=str)
    )


async def test_run_here_runs_while_every_slot_is_busy(store: spi.FlowStore, clock: ManualClock) -> None:
    """The one slot holds a hanging attempt, so the claim loop asks for nothing: only the start itself can
    have handed the new execution to the workers."""
    entered, release = asyncio.Event(), asyncio.Event()
    async with make_engine(store, clock, [chain(), hanging(entered, release)], batch_size=1) as engine:
        busy = await engine.workflows.start("hanging")
        await entered.wait()
        eid = await engine.workflows.start("chain", run_here=True)
        state = await until(store, eid)
        assert (state.status, (await store.get_execution(busy)).executor) == (
            spi.Completed(),
            engine.executor_id,
        )
        release.set()
        assert (await until(store, busy)).status == spi.Completed()
    fields = await store.get_all_fields(eid)
    assert (fields["a"].decode(), fields["c"].decode()) == (1, 2)


async def test_run_here_is_never_handed_out_by_a_poll(clock: ManualClock) -> None:
    store = MemoryHandOuts(clock)
    async with make_engine(store, clock, [chain()]) as engine:
        here = await engine.workflows.start("chain", run_here=True)
        assert (await until(store, here)).status == spi.Completed()
        queued = await engine.workflows.start("chain")
        assert (await until(store, queued)).status == spi.Completed()
        await settle()
    assert store.handed == [queued]


async def test_run_here_history_has_the_shape_of_a_queued_start(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [chain()]) as engine:
        queued = await engine.workflows.start("chain")
        await until(store, queued)
        here = await engine.workflows.start("chain", run_here=True)
        await until(store, here)
    queued_history = (await store.get_history(queued)).events
    here_history = (await store.get_history(here)).events
    assert shape(here_history) == shape(queued_history)
    assert [e.kind.value for e in here_history] == THREE_NODES
    claimed = [e.data["executor_id"] for e in here_history if e.kind == spi.EventKind.EXECUTION_CLAIMED]
    assert claimed == [engine.executor_id]
    assert await store.get_all_fields(here) == await store.get_all_fields(queued)


async def test_run_here_refuses_a_taken_id_writing_nothing(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [chain()]) as engine:
        await engine.workflows.start("chain", execution_id="taken", run_here=True)
        done = await until(store, "taken")
        await released(engine)
        history = (await store.get_history("taken")).events
        with pytest.raises(errors.FlowDuplicateExecution):
            await engine.workflows.start("chain", execution_id="taken", run_here=True)
        with pytest.raises(errors.FlowDuplicateExecution):
            await engine.workflows.start("chain", execution_id="taken")
        await settle()
        assert (await store.get_execution("taken"), (await store.get_history("taken")).events) == (
            done,
            history,
        )
        assert engine.health().claims_held == ()


async def test_run_here_checks_inputs_before_writing(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [chain()]) as engine:
        with pytest.raises(errors.FlowInputError):
            await engine.workflows.start("chain", execution_id="bad", inputs={"nope": 1}, run_here=True)
    assert await store.get_execution("bad") is None


async def test_a_crash_while_running_here_is_recovered_after_the_lease(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """The starting engine dies mid-attempt (leaves with no grace, writing nothing more); the claim it was
    created with lapses like any other, and another engine finishes the execution."""
    entered, release = asyncio.Event(), asyncio.Event()
    flow = hanging(entered, release)
    async with make_engine(store, clock, [flow]) as doomed:
        eid = await doomed.workflows.start("hanging", run_here=True)
        await entered.wait()
        assert doomed.health().claims_held == (eid,)
    state = await store.get_execution(eid)
    assert (state.executor, state.claim_expiry) == (doomed.executor_id, clock.now() + LEASE)
    release.set()
    async with make_engine(store, clock, [flow]) as survivor:
        await advance(clock, LEASE)  # its first poll finds the row still claimed, and waits out the lease
        assert (await until(store, eid)).status == spi.Completed()
    claims = [
        e.data["executor_id"]
        for e in (await store.get_history(eid)).events
        if e.kind == spi.EventKind.EXECUTION_CLAIMED
    ]
    assert claims == [doomed.executor_id, survivor.executor_id]
    assert (await store.get_field(eid, "after")).decode() == "done!"


async def test_run_here_renews_its_claim_while_running(store: spi.FlowStore, clock: ManualClock) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    async with make_engine(store, clock, [hanging(entered, release)]) as engine:
        eid = await engine.workflows.start("hanging", run_here=True)
        await entered.wait()
        for _ in range(4):  # 40 seconds, more than a lease
            await advance(clock, timedelta(seconds=10), blocked=2)  # the idle poll and the renewal
            await until(store, eid, lambda s: s.claim_expiry == clock.now() + LEASE)
        release.set()
        assert (await until(store, eid)).status == spi.Completed()
    assert (await kinds(store, eid)).count("ExecutionClaimed") == 1


async def test_run_here_without_running_workers_is_a_plain_start(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """An engine whose workers are not running (an API process) starts the execution unclaimed; workers
    elsewhere pick it up."""
    api = make_engine(store, clock, [chain()])
    await api.register("chain", chain())
    eid = await api.workflows.start("chain", run_here=True)
    state = await store.get_execution(eid)
    assert (state.status, state.executor, state.claim_token) == (spi.Running(), None, None)
    async with make_engine(store, clock, [chain()]) as worker:
        assert (await until(store, eid)).status == spi.Completed()
    claims = [
        e.data["executor_id"]
        for e in (await store.get_history(eid)).events
        if e.kind == spi.EventKind.EXECUTION_CLAIMED
    ]
    assert claims == [worker.executor_id]


async def test_run_here_after_the_workers_stopped_is_a_plain_start(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    engine = make_engine(store, clock, [chain()])
    async with engine:
        pass
    eid = await engine.workflows.start("chain", run_here=True)
    assert (await store.get_execution(eid)).executor is None


class SlowCreate(MemoryStore):
    """A real memory store whose created-claimed writes wait to be let through."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.entered, self.go = asyncio.Event(), asyncio.Event()

    async def create_claimed_if_absent(self, *args: object, **kwargs: object):  # type: ignore[override]
        self.entered.set()
        await self.go.wait()
        return await super().create_claimed_if_absent(*args, **kwargs)  # type: ignore[arg-type]


async def test_run_here_racing_the_workers_stopping_hands_the_claim_back(clock: ManualClock) -> None:
    """The workers begin stopping while the claimed row is being written: the start hands the claim back
    at once, so the execution need not wait out a lease to be run elsewhere."""
    store = SlowCreate(clock)
    engine = make_engine(store, clock, [chain()])
    await engine.__aenter__()
    start = asyncio.ensure_future(engine.workflows.start("chain", execution_id="late", run_here=True))
    await store.entered.wait()
    await engine.__aexit__(None, None, None)
    store.go.set()
    assert await start == "late"
    state = await store.get_execution("late")
    assert (state.status, state.executor, state.claim_token) == (spi.Running(), None, None)
    assert engine.health().claims_held == ()
    async with make_engine(store, clock, [chain()]) as worker:
        assert (await until(store, "late")).status == spi.Completed()
    claims = [
        e.data["executor_id"] for e in store.history("late") if e.kind == spi.EventKind.EXECUTION_CLAIMED
    ]
    # the stopping engine's claim went with the row (its opening write) and was handed back unused
    assert claims == [engine.executor_id, worker.executor_id]


class CountsCommits(MemoryStore):
    """A real memory store that counts the transitions it commits under a claim (every write through a
    claim handle ends in one; the created-claimed row itself wakes nobody, so it is not one of them)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.commits = 0

    def _changed(self, *, registration: bool = False) -> None:
        self.commits += 1
        super()._changed(registration=registration)


@pytest.mark.parametrize("at_most_once", [False, True], ids=["plain", "at-most-once"])
async def test_run_here_writes_the_first_start_with_the_row(clock: ManualClock, at_most_once: bool) -> None:
    """The first attempt's opening (its claim and the first node's start) is known before the row exists:
    it goes with the row, and the first body runs with its start durable and no commit of its own before
    it, one commit per node in all. An at-most-once first node keeps its start as the last write before its
    body (found started and never finished, it would stop the execution for a person). Before, the opening
    was a commit of its own: 5 and 6."""
    store = CountsCommits(clock)
    seen: list[list[str]] = []

    def first(ctx: object) -> int:
        seen.append([e.kind.value for e in store.history("e")])
        return 1

    flow = (
        Flow.init("seen")
        .output("a", first, type=int, at_most_once=at_most_once)
        .step("b", lambda ctx: None)
        .output("c", lambda ctx: ctx.a + 1, type=int)
    )
    async with make_engine(store, clock, [flow]) as engine:
        before = store.commits  # the engine's own (its workflows registered)
        await engine.workflows.start("seen", execution_id="e", run_here=True)
        assert (await until(store, "e")).status == spi.Completed()
        commits = store.commits - before
    assert seen == [["Created", "ExecutionClaimed", "ExecutionResumed", "StepStarted"]]
    # a's value with b's start, b's completion with c's start, c's value, the ending; an at-most-once a
    # adds its own start and its value alone (and b's start alone after them)
    assert commits == (6 if at_most_once else 4)
    assert [e.kind.value for e in store.history("e")] == THREE_NODES
