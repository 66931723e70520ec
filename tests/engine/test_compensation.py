"""Undo and compensation (spec §5.6, DESIGN §3): one list, last noted first, each completion recorded."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from flowdeck.engine import Flow, FlowDomainError, Schedule
from flowdeck.engine.context import Context
from flowdeck.store import spi
from tests.engine.interp_support import Calls, Crash, World, world_fixture  # noqa: F401

LOG: list[str] = []
FAIL: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _clean_log() -> None:
    LOG.clear()
    FAIL.clear()


def release_hold(hold: str) -> None:
    """A module-level undo handler: found again by import path in any later process."""
    if FAIL.get(hold, 0) > 0:
        FAIL[hold] -= 1
        raise RuntimeError(f"warehouse refused to release {hold}")
    LOG.append(f"release {hold}")


def crash_once(hold: str) -> None:
    if FAIL.pop("crash", 0):
        raise Crash()
    LOG.append(f"crash-once {hold}")


class OutOfStock(FlowDomainError):
    """Nothing left."""


def fail(ctx: Any) -> None:
    raise OutOfStock("sku-9 is gone")


def reserve(ctx: Context) -> str:
    ctx.undo(release_hold, "hold-1")
    ctx.undo(release_hold, "hold-2")
    return "reserved"


async def test_a_domain_failure_unwinds_newest_first_and_ends_failed_with_its_kind(world: World) -> None:
    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append(f"undo a={ctx.a}"))
        .output("reserve", reserve, compensate=lambda ctx: LOG.append("undo reserve"))
        .step("b", lambda ctx: None, compensate=lambda ctx: LOG.append("undo b"))
        .step("boom", fail)
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert (report.outcome, report.detail) == ("failed", "OutOfStock: sku-9 is gone")
    assert LOG == ["undo b", "undo reserve", "release hold-2", "release hold-1", "undo a=1"]
    assert await world.status(eid) == spi.Failed("sku-9 is gone", "OutOfStock")
    compensated = await world.events(eid, spi.EventKind.NODE_COMPENSATED)
    assert [e.data["node_name"] for e in compensated] == [
        "b",
        "reserve",
        "reserve#undo1",
        "reserve#undo0",
        "a",
    ]
    kinds = await world.kinds(eid)
    assert kinds[kinds.index("StepFailed") :] == [
        "StepFailed",
        "CompensationStarted",
        *["NodeCompensated"] * 5,
        "CompensationCompleted",
        "ExecutionReleased",
        "Failed",
    ]


async def test_undo_notes_are_written_with_the_steps_result_in_one_write(world: World) -> None:
    flow = Flow.init("f").output("reserve", reserve)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert world.writes == {"append_event": 1, "record_progress": 1, "finish": 1}  # start, result, end
    assert (await world.fields(eid))["reserve#undo"] == [
        {"handler": "tests.engine.test_compensation:release_hold", "arg": "hold-1"},
        {"handler": "tests.engine.test_compensation:release_hold", "arg": "hold-2"},
    ]
    noted = await world.events(eid, spi.EventKind.UNDO_NOTED)
    assert [e.data["node"] for e in noted] == ["reserve", "reserve"]
    assert LOG == []  # a flow that ends well forgets them


async def test_ctx_undo_refuses_a_lambda_with_a_clear_error(world: World) -> None:
    def bad(ctx: Context) -> None:
        ctx.undo(lambda hold: None, "x")

    flow = Flow.init("f").step("bad", bad)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert status.code == "F0001"
    assert "module-level function" in status.reason


async def test_undo_notes_survive_a_restart_and_run_from_the_record(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def later(ctx: Any) -> None:
        if crash.pop("armed", False):
            raise Crash()
        raise OutOfStock("gone")

    flow = Flow.init("f").output("reserve", reserve).step("later", later)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["release hold-2", "release hold-1"]
    assert calls == {}


async def test_an_interrupted_unwind_resumes_with_only_the_remaining_handlers(world: World) -> None:
    def two_undos(ctx: Context) -> str:
        ctx.undo(crash_once, "first")
        ctx.undo(release_hold, "second")
        return "ok"

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
        .output("holds", two_undos)
        .step("boom", fail)
    )
    eid = await world.start(flow)
    FAIL["crash"] = 1
    await world.crash(flow, eid)  # dies in crash_once, after "second" was released
    assert LOG == ["release second"]
    assert await world.status(eid) == spi.Compensating(spi.Failure("sku-9 is gone", "OutOfStock"))
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["release second", "crash-once first", "undo a"]
    assert await world.status(eid) == spi.Failed("sku-9 is gone", "OutOfStock")
    assert (await world.kinds(eid)).count("CompensationStarted") == 1


async def test_a_failing_undo_stops_f0002_keeping_the_cause_and_a_resume_continues(world: World) -> None:
    def hold(ctx: Context) -> str:
        ctx.undo(release_hold, "h")
        return "held"

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
        .output("hold", hold)
        .step("boom", fail)
    )
    eid = await world.start(flow)
    FAIL["h"] = 3  # three immediate tries, all refused
    report = await world.attempt(flow, eid)
    assert report.outcome == "stopped"
    cause = spi.Failure("sku-9 is gone", "OutOfStock")
    status = await world.status(eid)
    assert isinstance(status, spi.Stopped)
    assert (status.code, status.node, status.cause) == ("F0002", "hold#undo0", cause)
    assert LOG == []
    failed = await world.events(eid, spi.EventKind.COMPENSATION_FAILED)
    assert [e.data["error"] for e in failed] == ["warehouse refused to release h"]
    resumed = spi.Event(spi.EventKind.RESUMED, "f", eid, world.clock.now(), {})
    assert await world.store.resume(eid, "", resumed) is spi.OperatorOutcome.APPLIED
    assert await world.status(eid) == spi.Compensating(cause)
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["release h", "undo a"]
    assert await world.status(eid) == spi.Failed("sku-9 is gone", "OutOfStock")


async def test_a_handler_retries_under_its_nodes_schedule(world: World) -> None:
    def hold(ctx: Context) -> str:
        ctx.undo(release_hold, "h")
        return "held"

    flow = (
        Flow.init("f")
        .output("hold", hold, retry=Schedule.fixed(timedelta(minutes=5)).take(3))
        .step("boom", fail)
    )
    eid = await world.start(flow)
    FAIL["h"] = 1
    assert (await world.attempt(flow, eid)).outcome == "suspended"  # a durable back-off inside the unwind
    assert set((await world.state(eid)).waits) == {"hold#undo0#retry1"}
    await world.clock.advance(timedelta(minutes=5))
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["release h"]


async def test_subflow_children_are_undone_before_the_parents_earlier_nodes(world: World) -> None:
    child = (
        Flow.init("child")
        .input("n", int)
        .output("c1", lambda ctx: ctx.n, compensate=lambda ctx: LOG.append("undo child c1"))
        .output("c2", lambda ctx: ctx.n, compensate=lambda ctx: LOG.append("undo child c2"))
    )
    flow = (
        Flow.init("f")
        .output("p1", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo p1"))
        .subflow("sub", child, lambda ctx: {"n": ctx.p1})
        .step("boom", fail)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["undo child c2", "undo child c1", "undo p1"]


async def test_foreach_items_compensate_with_item_and_value(world: World) -> None:
    flow = (
        Flow.init("f")
        .foreach(
            "charge",
            lambda ctx: ["x", "y"],
            lambda item: item.upper(),
            concurrency=1,
            compensate=lambda item, value: LOG.append(f"refund {item}={value}"),
        )
        .step("boom", fail)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert LOG == ["refund y=Y", "refund x=X"]


async def test_cancel_while_waiting_for_an_input_unwinds_and_ends_cancelled(world: World) -> None:
    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
        .input("approval", bool)
        .step("after", lambda ctx: LOG.append("after"))
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    assert await world.store.request_cancel(eid, "changed my mind", "alice") == spi.Accepted()
    report = await world.attempt(flow, eid)
    assert (report.outcome, report.detail) == ("cancelled", "cancelled")
    assert await world.status(eid) == spi.Cancelled("changed my mind")
    assert LOG == ["undo a"]
    state = await world.state(eid)
    assert state.waits == {}
    cancelled = await world.events(eid, spi.EventKind.CANCELLED)
    assert [e.data["reason"] for e in cancelled] == ["changed my mind"]


async def test_cancel_with_nothing_to_undo_ends_cancelled_directly(world: World) -> None:
    flow = Flow.init("f").input("approval", bool)
    eid = await world.start(flow)
    await world.attempt(flow, eid)
    await world.store.request_cancel(eid, "no longer needed")
    assert (await world.attempt(flow, eid)).outcome == "cancelled"
    assert "CompensationStarted" not in await world.kinds(eid)


async def test_a_flow_listening_for_cancel_takes_the_reason_as_the_inputs_value(world: World) -> None:
    flow = (
        Flow.init("f")
        .input("answer", str, on_cancel=lambda ctx, reason: f"withdrawn: {reason}")
        .sleep("grace", timedelta(minutes=1), on_cancel=lambda ctx, reason: "cut short")
        .output("decision", lambda ctx: ctx.answer)
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    await world.store.request_cancel(eid, "expense dropped")
    report = await world.attempt(flow, eid)
    assert report == type(report)(eid, "suspended", "grace")  # the flow goes on, to its next wait
    assert (await world.fields(eid))["answer"] == "withdrawn: expense dropped"
    state = await world.state(eid)
    assert (state.cancel_requested, state.status) == (False, spi.Running())
    await world.clock.advance(timedelta(minutes=1))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["decision"] == "withdrawn: expense dropped"


async def test_a_step_that_completes_is_not_compensated_when_the_flow_completes(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert LOG == []


async def test_cancelling_a_stopped_execution_runs_its_undos(world: World) -> None:
    def pay(ctx: Any) -> str:
        raise Crash()

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
        .output("paid", pay, at_most_once=True)
    )
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert (await world.attempt(flow, eid)).outcome == "stopped"  # F0004
    assert await world.store.request_cancel(eid, "give up") == spi.Accepted()
    assert (await world.attempt(flow, eid)).outcome == "cancelled"
    assert LOG == ["undo a"]
    assert await world.status(eid) == spi.Cancelled("give up")


async def test_cancel_during_a_long_back_off_unwinds(world: World) -> None:
    from flowdeck.engine import FlowRetry

    def down(ctx: Any) -> None:
        raise FlowRetry("remote down")

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: 1, compensate=lambda ctx: LOG.append("undo a"))
        .step("call", down, retry=Schedule.fixed(timedelta(hours=1)))
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    await world.store.request_cancel(eid, "stop trying")
    assert (await world.attempt(flow, eid)).outcome == "cancelled"
    assert LOG == ["undo a"]
    assert (await world.state(eid)).waits == {}


async def test_a_cancel_arriving_during_a_step_is_seen_at_the_next_boundary(world: World) -> None:
    async def slow(ctx: Any) -> None:
        LOG.append("slow")
        await world.store.request_cancel(ctx.execution_id, "too late")

    flow = (
        Flow.init("f")
        .step("slow", slow, compensate=lambda ctx: LOG.append("undo slow"))
        .step("next", lambda ctx: LOG.append("next"))
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "cancelled"
    assert LOG == ["slow", "undo slow"]
