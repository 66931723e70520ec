"""A body's exception the engine's `transient` predicate calls the world's (a locked database) is retried,
never taken for a mistake: under the node's schedule, or TRANSIENT_RETRY when it has none, and F0003 only
once spent. Time moves through the manual clock only."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowdeck.engine import Flow, Schedule
from flowdeck.engine.bodies import TRANSIENT_RETRY
from flowdeck.engine.config import EngineConfig, never
from flowdeck.engine.interpreter import AttemptReport, run_attempt
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import make_engine, until
from tests.engine.interp_support import Calls, World, world_fixture  # noqa: F401


class Locked(Exception):
    """database is locked"""


class Mistake(Exception):
    """a bug in the body"""


def is_locked(error: BaseException) -> bool:
    return isinstance(error, Locked)


def failing(calls: Calls, failures: int, error: BaseException) -> object:
    def body(ctx: object) -> str:
        calls.hit("body")
        if calls["body"] <= failures:
            raise error
        return "ok"

    return body


async def attempt(world: World, flow: Flow, eid: str) -> AttemptReport:
    """One attempt as the worker makes it, with the engine's `transient` predicate."""
    claimed = await world.claim(flow, eid)
    if claimed is None:
        return AttemptReport(eid, "not-ready")
    return await run_attempt(
        flow, claimed, store=world.store, clock=world.clock, executor_id="ex-1", transient=is_locked
    )


async def run_through(world: World, flow: Flow, eid: str) -> AttemptReport:
    """Attempts until the execution ends or stops, moving the clock past each back-off: in-process ones
    once the attempt sleeps on the clock, durable ones (parked) by the wait row's due time."""
    while True:
        task = asyncio.create_task(attempt(world, flow, eid))
        while not task.done():
            if world.clock.pending_sleeps():
                await world.clock.advance(timedelta(milliseconds=50))
            await asyncio.sleep(0)
        report = task.result()
        if report.outcome != "suspended":
            return report
        await world.clock.advance(timedelta(seconds=5))


def test_the_default_is_never_and_the_transient_schedule_backs_off_from_50ms() -> None:
    assert EngineConfig().transient is never
    delays = [TRANSIENT_RETRY.delay(n) for n in range(17)]
    assert delays[0] == timedelta(milliseconds=50)
    assert delays[7] == delays[15] == timedelta(seconds=5)
    assert delays[16] is None


async def test_a_transient_exception_is_retried_and_the_execution_completes(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output("a", failing(calls, 3, Locked("database is locked")))  # no retry schedule
    eid = await world.start(flow)
    assert (await run_through(world, flow, eid)).outcome == "completed"
    assert calls == {"body": 4}
    retried = await world.events(eid, spi.EventKind.STEP_RETRIED)
    assert [(e.data["attempt"], e.data["delay"], e.data["transient"]) for e in retried] == [
        (1, 0.05, True),
        (2, 0.1, True),
        (3, 0.2, True),
    ]


async def test_a_transient_exception_follows_the_nodes_own_schedule(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a", failing(calls, 99, Locked("database is locked")), retry=Schedule.fixed(timedelta(0)).take(2)
    )
    eid = await world.start(flow)
    assert (await run_through(world, flow, eid)).outcome == "stopped"
    assert calls == {"body": 3}
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node) == ("F0003", "a")


async def test_a_transient_exception_that_never_clears_stops_f0003_with_the_tries_counted(
    world: World,
) -> None:
    calls = Calls()
    flow = Flow.init("f").output("a", failing(calls, 99, Locked("database is locked")))
    eid = await world.start(flow)
    assert (await run_through(world, flow, eid)).outcome == "stopped"
    assert calls == {"body": 17}  # the first try and TRANSIENT_RETRY's sixteen
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node) == ("F0003", "a")
    assert status.reason == "the world did not answer after 17 tries: database is locked"
    assert len(await world.events(eid, spi.EventKind.STEP_RETRIED)) == 16


async def test_an_exception_the_predicate_does_not_call_transient_still_stops_f0001(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output("a", failing(calls, 99, Mistake("bug")))
    eid = await world.start(flow)
    assert (await attempt(world, flow, eid)).outcome == "stopped"
    assert calls == {"body": 1}
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node) == ("F0001", "a")
    assert await world.events(eid, spi.EventKind.STEP_RETRIED) == []


async def test_without_the_predicate_a_lock_is_a_mistake(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output("a", failing(calls, 99, Locked("database is locked")))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert status.code == "F0001"


async def test_the_engines_workers_retry_what_its_config_calls_transient(memory_store: MemoryStore) -> None:
    clock = memory_store.clock
    assert isinstance(clock, ManualClock)
    calls = Calls()
    flow = Flow.init("f").output("a", failing(calls, 2, Locked("database is locked")))
    async with make_engine(memory_store, clock, [flow], transient=is_locked) as engine:
        eid = await engine.workflows.start("f")
        done = asyncio.create_task(until(memory_store, eid, lambda s: s.status != spi.Running()))
        while not done.done():
            if clock.pending_sleeps() > 1:  # the idle poll, and the body's back-off
                await clock.advance(timedelta(milliseconds=50))
            await asyncio.sleep(0)
        state = done.result()
    assert state.status == spi.Completed()
    assert calls == {"body": 3}
