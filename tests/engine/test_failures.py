"""The failure model (DESIGN §3): answers unwind, the world not answering is retried, mistakes stop."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from flowdeck.engine import Flow, FlowDomainError, FlowRetry, Schedule, values
from flowdeck.engine.interpreter import AttemptReport, run_attempt
from flowdeck.store import spi
from tests.engine.interp_support import (  # noqa: F401
    Calls,
    CountingClaimed,
    Crash,
    World,
    sleeping,
    world_fixture,
)


class CardDeclined(FlowDomainError):
    """The card was declined."""


class Flaky(Exception):
    """A remote system hiccup."""


def flaky(calls: Calls, failures: int, error: BaseException) -> object:
    def body(ctx: object) -> str:
        calls.hit("flaky")
        if calls["flaky"] <= failures:
            raise error
        return "ok"

    return body


async def test_a_domain_error_fails_the_execution_with_its_kind(world: World) -> None:
    def charge(ctx: object) -> None:
        raise CardDeclined("card 4242 declined")

    flow = Flow.init("f").output("a", lambda ctx: 1).step("charge", charge)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report == AttemptReport(eid, "failed", "CardDeclined: card 4242 declined")
    assert await world.status(eid) == spi.Failed("card 4242 declined", "CardDeclined")
    failed = await world.events(eid, spi.EventKind.STEP_FAILED)
    assert [dict(e.data) for e in failed] == [
        {"step_name": "charge", "error": "card 4242 declined", "error_kind": "CardDeclined"}
    ]


async def test_short_retries_sleep_in_process_and_count_in_history(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a", flaky(calls, 2, FlowRetry("busy")), retry=Schedule.fixed(timedelta(milliseconds=100))
    )
    eid = await world.start(flow)
    task = asyncio.create_task(world.attempt(flow, eid))
    for _ in range(2):
        await sleeping(world.clock)
        await world.clock.advance(timedelta(milliseconds=100))
    assert (await task).outcome == "completed"
    assert calls == {"flaky": 3}
    retried = await world.events(eid, spi.EventKind.STEP_RETRIED)
    assert [(e.data["attempt"], e.data["delay"]) for e in retried] == [(1, 0.1), (2, 0.1)]


async def test_retry_on_lists_exceptions_the_world_may_raise(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a", flaky(calls, 1, Flaky("reset")), retry=Schedule.fixed(timedelta(0)), retry_on=(Flaky,)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"flaky": 2}


async def test_a_long_back_off_is_a_durable_wait_row_and_the_count_survives_attempts(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a", flaky(calls, 2, FlowRetry("down")), retry=Schedule.fixed(timedelta(minutes=10)).take(2)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "a#retry1")
    state = await world.state(eid)
    assert state.waits == {"a#retry1": spi.WakeAt(world.clock.now() + timedelta(minutes=10))}
    assert (await world.attempt(flow, eid)).outcome == "not-ready"
    await world.clock.advance(timedelta(minutes=10))
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "a#retry2")
    await world.clock.advance(timedelta(minutes=10))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"flaky": 3}
    retried = await world.events(eid, spi.EventKind.STEP_RETRIED)
    assert [e.data["attempt"] for e in retried] == [1, 2]
    assert (await world.state(eid)).waits == {}


async def test_flow_retry_after_overrides_the_schedule_delay(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a",
        flaky(calls, 1, FlowRetry("later", after=timedelta(hours=2))),
        retry=Schedule.fixed(timedelta(seconds=1)),
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    assert (await world.state(eid)).waits == {"a#retry1": spi.WakeAt(world.clock.now() + timedelta(hours=2))}


async def test_an_exhausted_schedule_stops_the_execution_f0003(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output(
        "a", flaky(calls, 99, FlowRetry("still down")), retry=Schedule.fixed(timedelta(0)).take(2)
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node, status.cause) == ("F0003", "a", None)
    assert calls == {"flaky": 3}
    stopped = await world.events(eid, spi.EventKind.STOPPED)
    assert [(e.data["code"], e.data["node"]) for e in stopped] == [("F0003", "a")]


async def test_flow_retry_without_a_schedule_stops_f0003(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f").output("a", flaky(calls, 99, FlowRetry("no")))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert status.code == "F0003"
    assert calls == {"flaky": 1}


async def test_a_timeout_is_retried_and_recorded(world: World) -> None:
    calls = Calls()
    gate = asyncio.Event()

    async def slow(ctx: object) -> str:
        calls.hit("slow")
        if calls["slow"] == 1:
            await gate.wait()  # never set: this attempt hangs until the timeout
        return "done"

    flow = Flow.init("f").output("a", slow, timeout=timedelta(seconds=5), retry=Schedule.fixed(timedelta(0)))
    eid = await world.start(flow)
    task = asyncio.create_task(world.attempt(flow, eid))
    await sleeping(world.clock)
    await world.clock.advance(timedelta(seconds=5))
    assert (await task).outcome == "completed"
    timed_out = await world.events(eid, spi.EventKind.STEP_TIMED_OUT)
    assert [dict(e.data) for e in timed_out] == [{"step_name": "a", "timeout": 5.0}]
    assert calls == {"slow": 2}


async def test_a_sync_body_past_its_timeout_is_abandoned_not_awaited(world: World) -> None:
    import threading

    release = threading.Event()

    def stuck(ctx: object) -> str:
        release.wait(5)
        return "late"

    flow = Flow.init("f").output("a", stuck, timeout=timedelta(seconds=1))
    eid = await world.start(flow)
    task = asyncio.create_task(world.attempt(flow, eid))
    await sleeping(world.clock)
    await world.clock.advance(timedelta(seconds=1))
    report = await asyncio.wait_for(task, 2)
    release.set()
    assert report.outcome == "stopped"  # no schedule: the world did not answer, F0003
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert status.code == "F0003"


async def test_a_mistake_stops_f0001_with_traceback_and_undoes_nothing(world: World) -> None:
    calls = Calls()

    def broken(ctx: object) -> None:
        return [][1]

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: calls.hit("undo a"))
        .step("broken", broken)
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node, status.reason) == (
        "F0001",
        "broken",
        "IndexError: list index out of range",
    )
    assert "Traceback" in status.detail
    assert "return [][1]" in status.detail
    assert calls == {}
    assert "CompensationStarted" not in await world.kinds(eid)


async def test_a_value_that_cannot_be_recorded_is_a_mistake(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: object())
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert status.code == "F0001"
    assert "type=" in status.reason


async def test_at_most_once_started_but_unfinished_stops_f0004(world: World) -> None:
    calls = Calls()

    def pay(ctx: object) -> str:
        calls.hit("pay")
        raise Crash()

    flow = Flow.init("f").output("paid", pay, at_most_once=True)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert "StepStarted" in await world.kinds(eid)  # flushed durably before the body ran
    report = await world.attempt(flow, eid)
    assert report.outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node) == ("F0004", "paid")
    assert calls == {"pay": 1}


async def test_an_answer_counts_as_the_nodes_completion_on_resume(world: World) -> None:
    calls = Calls()

    def pay(ctx: object) -> str:
        calls.hit("pay")
        raise Crash()

    flow = (
        Flow.init("f")
        .output("paid", pay, at_most_once=True)
        .step("notify", lambda ctx: calls.hit("notify"), at_most_once=True)
        .output("after", lambda ctx: f"{ctx.paid}!")
    )
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    answered = spi.Event(spi.EventKind.ANSWERED, "f", eid, world.clock.now(), {"node": "paid"})
    outcome = await world.store.answer(eid, "paid", spi.FieldData.of("ch_1", "json"), answered)
    assert outcome is spi.OperatorOutcome.APPLIED
    resumed = spi.Event(spi.EventKind.RESUMED, "f", eid, world.clock.now(), {})
    assert await world.store.resume(eid, "", resumed) is spi.OperatorOutcome.APPLIED
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["after"] == "ch_1!"
    assert calls == {"pay": 1, "notify": 1}


async def test_a_valueless_answer_completes_a_step(world: World) -> None:
    calls = Calls()

    def ship(ctx: object) -> None:
        calls.hit("ship")
        raise Crash()

    flow = Flow.init("f").step("ship", ship, at_most_once=True).step("done", lambda ctx: calls.hit("done"))
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    answered = spi.Event(spi.EventKind.ANSWERED, "f", eid, world.clock.now(), {"node": "ship"})
    assert await world.store.answer(eid, "ship", None, answered) is spi.OperatorOutcome.APPLIED
    await world.store.resume(eid, "", spi.Event(spi.EventKind.RESUMED, "f", eid, world.clock.now(), {}))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"ship": 1, "done": 1}


class FailingClaimed(CountingClaimed):
    """MemoryStore's handle whose database goes away at the n-th write (fault injection, not a mock)."""

    def __init__(self, inner: spi.Claimed, fail_at: int) -> None:
        super().__init__(inner, Counter())
        self.fail_at = fail_at

    async def record_progress(self, *args: Any, **kwargs: Any) -> spi.ProgressOutcome:
        if sum(self.writes.values()) + 1 >= self.fail_at:
            raise spi.FlowStoreError("connection refused", retryable=True)
        return await super().record_progress(*args, **kwargs)


async def test_a_store_failure_propagates_and_decides_nothing(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1).output("b", lambda ctx: 2)
    eid = await world.start(flow)
    claimed = await world.claim(flow, eid)
    assert claimed is not None
    failing = FailingClaimed(claimed.inner, fail_at=3)  # a's start; a's value with b's start; b's value
    with pytest.raises(spi.FlowStoreError):
        await run_attempt(flow, failing, store=world.store, clock=world.clock, executor_id="ex-1")
    assert await world.fields(eid) == {"a": 1}
    state = await world.state(eid)
    assert (state.status, state.executor) == (spi.Running(), "ex-1")  # nothing decided; the claim lapses


async def test_a_cancelled_task_writes_nothing(world: World) -> None:
    started = asyncio.Event()

    async def wait_forever(ctx: object) -> None:
        started.set()
        await asyncio.Event().wait()

    flow = Flow.init("f").output("a", lambda ctx: 1).step("hang", wait_forever)
    eid = await world.start(flow)
    task = asyncio.create_task(world.attempt(flow, eid))
    await started.wait()
    before = await world.kinds(eid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await world.kinds(eid) == before


async def test_ctx_attempt_counts_retries_and_the_key_stays_the_same(world: World) -> None:
    seen: list[tuple[int, str]] = []

    def body(ctx: Any) -> str:
        seen.append((ctx.attempt, ctx.key))
        if ctx.attempt < 2:
            raise FlowRetry("again")
        return "ok"

    flow = Flow.init("f").output("a", body, retry=Schedule.fixed(timedelta(minutes=1)))
    eid = await world.start(flow, "x1")
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    await world.clock.advance(timedelta(minutes=1))
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    await world.clock.advance(timedelta(minutes=1))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert seen == [(0, "x1/a"), (1, "x1/a"), (2, "x1/a")]


async def test_a_stop_retires_the_waits_and_a_resumed_sleep_keeps_its_first_deadline(world: World) -> None:
    calls = Calls()

    def ship(ctx: object) -> None:
        calls.hit("ship")
        if calls["ship"] == 1:
            raise RuntimeError("bug in the first version")

    flow = (
        Flow.init("f")
        .sleep("cool-off", timedelta(hours=1))
        .zip(Flow.init("f").input("go", bool).step("ship", ship))
    )
    eid = await world.start(flow)
    first_deadline = world.clock.now() + timedelta(hours=1)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    assert dict((await world.state(eid)).waits) == {
        "cool-off": spi.WakeAt(first_deadline),
        "go": spi.WakeOnField("go"),
    }
    assert (
        await world.store.signal(
            eid,
            "go",
            values.encode("go", True, bool),
            spi.Event(spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "go"}),
        )
        == spi.Delivered()
    )
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    state = await world.state(eid)
    assert isinstance(state.status, spi.Stopped)
    assert dict(state.waits) == {}  # a stopped execution waits for a person, not for its rows

    await world.clock.advance(timedelta(minutes=30))
    resumed = spi.Event(spi.EventKind.RESUMED, "f", eid, world.clock.now(), {"from_hash": "", "to_hash": ""})
    assert await world.store.resume(eid, "", resumed) == spi.OperatorOutcome.APPLIED
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    assert dict((await world.state(eid)).waits) == {"cool-off": spi.WakeAt(first_deadline)}
    assert calls == {"ship": 2}
