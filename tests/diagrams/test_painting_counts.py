"""Counts painted in every format, read back by the real tools (tests/diagrams/painted.py): a foreach's
items done, running and failed of N, a loop_on's iterations, a plain loop's iterations once it completed
(and none while it runs: they are in no record yet). Real executions on the MemoryStore."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from flowdeck.engine import Flow, FlowDomainError, Loop, Schedule
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.progress import NodeStatus, Progress
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.diagrams import painted
from tests.diagrams.painted import FORMATS
from tests.engine.engine_support import make_engine, until, waiting_for

C, R, P, F, S = (
    NodeStatus.COMPLETED,
    NodeStatus.RUNNING,
    NodeStatus.PENDING,
    NodeStatus.FAILED,
    NodeStatus.SLEEPING,
)


def _none(ctx: object) -> None:
    return None


class Declined(FlowDomainError):
    """The card was declined."""


@asynccontextmanager
async def _engine(flow: Flow) -> AsyncIterator[tuple[FlowEngine, MemoryStore, ManualClock]]:
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [flow]) as engine:
        yield engine, store, clock


async def _described(engine: FlowEngine, eid: str = "e1") -> Progress:
    detail = await engine.executions.describe(eid)
    assert detail.progress is not None
    return detail.progress


def _gated(entered: asyncio.Event, release: asyncio.Event) -> Callable[[int, object], Awaitable[int]]:
    async def charge(item: int, ctx: object) -> int:
        if item == 2:  # the second item holds until released
            entered.set()
            await release.wait()
        return item * 10

    return charge


# -------------------------------------------------------------------------------------------- foreach


@pytest.mark.parametrize("format", FORMATS)
async def test_a_foreach_in_flight_paints_done_and_running_of_n(format: str) -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    flow = (
        Flow.init("charges")
        .foreach("charges", lambda ctx: [1, 2, 3], _gated(entered, release), concurrency=1, type=int)
        .step("after", _none)
    )
    async with _engine(flow) as (engine, store, _):
        await engine.workflows.start("charges", execution_id="e1")
        await asyncio.wait_for(entered.wait(), 10)
        progress = await _described(engine)
        release.set()
        await until(store, "e1")
    entry = progress.by_name("charges")
    assert entry is not None
    assert (entry.done, entry.total, entry.items_running, entry.items_failed) == (1, 3, 1, None)
    painted.check(
        format,
        flow,
        progress,
        {"charges": (R, "charges", "running 1/3, 1 running"), "after": (P, "after", "pending")},
    )
    if format == "json":
        node = painted.json_nodes(flow, progress)[entry.place]
        assert (node.done, node.total, node.itemsRunning, node.itemsFailed) == (1, 3, 1, None)
        wire = painted.wire_progress(progress)[entry.place]
        assert (wire.done, wire.total, wire.items_running, wire.items_failed) == (1, 3, 1, None)


def _declines_the_third(item: int, ctx: object) -> int:
    if item == 3:
        raise Declined(f"card declined for item {item}")
    return item


refunds = (
    Flow.init("refunds")
    .foreach("refunds", lambda ctx: [1, 2, 3, 4], _declines_the_third, concurrency=1, type=int)
    .step("after", _none)
)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_failed_foreach_paints_done_and_failed_of_n(format: str) -> None:
    async with _engine(refunds) as (engine, store, _):
        await engine.workflows.start("refunds", execution_id="e1")
        await until(store, "e1")
        progress = await _described(engine)
    entry = progress.by_name("refunds")
    assert entry is not None
    counts = (entry.status, entry.done, entry.total, entry.items_running, entry.items_failed)
    assert counts == (F, 2, 4, None, 1)
    painted.check(
        format,
        refunds,
        progress,
        {
            "refunds": (F, "refunds", "failed 2/4, 1 failed; card declined for item 3"),
            "after": (P, "after", "pending"),
        },
    )
    if format == "json":
        wire = painted.wire_progress(progress)[entry.place]
        assert (wire.status, wire.done, wire.total, wire.items_failed) == (
            "failed:2/4, 1 failed; card declined for item 3",
            2,
            4,
            1,
        )


# -------------------------------------------------------------------------------------------- loop_on


def _ticks(state: int, ctx: object) -> object:
    return Loop.done(state * 10) if state == 2 else Loop.again(state + 1)


polling = (
    Flow.init("polling")
    .loop_on("poll", Schedule.fixed(timedelta(minutes=5)), _ticks, initial=0, type=int)
    .step("after", _none)
)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_loop_on_paints_its_iterations_between_them_and_once_done(format: str) -> None:
    async with _engine(polling) as (engine, store, clock):
        await engine.workflows.start("polling", execution_id="e1")
        await until(store, "e1", waiting_for("poll##0"))
        await clock.advance(5 * 60)
        await until(store, "e1", waiting_for("poll##1"))
        between = await _described(engine)
        await clock.advance(5 * 60)
        await until(store, "e1")
        done = await _described(engine)
    place = painted.places(polling)["poll"]
    assert between.by_place(place).iterations == 2  # type: ignore[union-attr]
    got = painted.check(format, polling, between, {"poll": (S, "poll", "iteration 2")})
    assert any(line.startswith("sleeping until ") for line in got[place].lines)
    assert done.by_place(place).iterations == 3  # type: ignore[union-attr]
    painted.check(
        format,
        polling,
        done,
        {"poll": (C, "poll", "completed 3 iterations"), "after": (C, "after", "completed")},
    )
    if format == "json":
        assert painted.json_nodes(polling, done)[place].iterations == 3
        assert painted.wire_progress(between)[place].iterations == 2


# ----------------------------------------------------------------------------------------------- loop


def _counter(state: int, ctx: object) -> object:
    return Loop.done(state) if state >= 3 else Loop.again(state + 1)


counting = Flow.init("counting").loop("count", _counter, initial=0, type=int).step("after", _none)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_completed_loop_paints_its_iterations(format: str) -> None:
    async with _engine(counting) as (engine, store, _):
        await engine.workflows.start("counting", execution_id="e1")
        await until(store, "e1")
        progress = await _described(engine)
    place = painted.places(counting)["count"]
    painted.check(
        format,
        counting,
        progress,
        {"count": (C, "count", "completed 4 iterations"), "after": (C, "after", "completed")},
    )
    if format == "json":
        assert painted.json_nodes(counting, progress)[place].iterations == 4
        assert painted.wire_progress(progress)[place].iterations == 4


@pytest.mark.parametrize("format", FORMATS)
async def test_a_loop_in_flight_paints_running_with_no_count(format: str) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def spin(state: int, ctx: object) -> object:
        if state == 2:
            entered.set()
            await release.wait()
            return Loop.done(state)
        return Loop.again(state + 1)

    flow = Flow.init("spinning").loop("spin", spin, initial=0, type=int).step("after", _none)
    async with _engine(flow) as (engine, store, _):
        await engine.workflows.start("spinning", execution_id="e1")
        await asyncio.wait_for(entered.wait(), 10)
        progress = await _described(engine)
        release.set()
        await until(store, "e1")
    place = painted.places(flow)["spin"]
    got = painted.check(format, flow, progress, {"spin": (R, "spin", "running"), "after": (P, "after")})
    assert not any("iteration" in line for line in got[place].lines)
    if format == "json":
        assert painted.json_nodes(flow, progress)[place].iterations is None
