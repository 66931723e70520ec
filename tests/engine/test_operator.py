"""The operator verbs: a mistake stops an execution for a person, who resumes it on a fixed version (dry
run first), answers for a node, or ends it; each refusal is typed and writes nothing."""

from __future__ import annotations

import asyncio

import pytest

from examples import seed
from examples.seed import Order
from flowdeck.engine import errors, schema
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until, waiting_for

ORDER = seed.sample_order()
CALLS: list[str] = []


def total(ctx: object) -> int:
    CALLS.append("total")
    return sum(i.qty * i.price for i in ctx.order.items)  # type: ignore[attr-defined]


def buggy_label(ctx: object) -> str:
    CALLS.append("buggy_label")
    return {"colour": "red"}["color"]


def fixed_label(ctx: object) -> str:
    CALLS.append("fixed_label")
    return f"{ctx.order.id}: {ctx.total} cents"  # type: ignore[attr-defined]


def labels(label: object) -> Flow:
    return (
        Flow.init("labels")
        .input("order", Order)
        .output("total", total, type=int)
        .output(
            "charge",
            lambda ctx: seed.charge_card(ctx.order.id, ctx.total),
            type=str,
            compensate=lambda ctx: seed.refund_charge(ctx.charge),
        )
        .output("label", label, type=str)
        .step("ship", lambda ctx: seed.ship(ctx.order))
    )


BUGGY, FIXED = labels(buggy_label), labels(fixed_label)


@pytest.fixture(autouse=True)
def _no_calls() -> None:
    CALLS.clear()


def stopped(state: spi.ExecutionState) -> bool:
    return isinstance(state.status, spi.Stopped)


async def _stopped_execution(engine_store: spi.FlowStore, engine: object) -> str:
    eid = await engine.workflows.start("labels", execution_id="e1", inputs={"order": ORDER})  # type: ignore[attr-defined]
    await until(engine_store, eid, stopped)
    return eid


async def test_a_mistake_stops_and_a_fixed_version_resumes(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [BUGGY]) as engine:
        eid = await _stopped_execution(store, engine)
        detail = await engine.executions.describe(eid)
        assert (detail.stop.code, detail.stop.node, detail.stop.reason) == (
            "F0001",
            "label",
            "KeyError: 'color'",
        )
        assert [s.execution_id for s in (await engine.executions.search(status="stopped:F0001")).items] == [
            eid
        ]

        await engine.register("labels", FIXED)
        history = await store.get_history(eid)
        report = await engine.resume(eid)
        assert (report.kept, report.next_node, report.conflicts) == (
            ["order", "total", "charge"],
            "label",
            [],
        )
        assert await store.get_history(eid) == history
        assert (await store.get_execution(eid)).hash == schema.structural_hash(BUGGY)

        await engine.resume(eid, go=True, actor="ops")
        state = await until(store, eid)
    assert (state.status, state.hash) == (spi.Completed(), schema.structural_hash(FIXED))
    assert CALLS == ["total", "buggy_label", "fixed_label"]
    assert seed.LEDGER == [("charge", "o-1017", "1200"), ("ship", "o-1017")]
    assert (await store.get_field(eid, "label")).decode() == "o-1017: 1200 cents"


async def test_a_resume_with_conflicts_is_refused_and_writes_nothing(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    renamed = (
        Flow.init("labels")
        .input("order", Order)
        .output("sum", total, type=int)
        .output("label", lambda ctx: "x", type=str)
    )
    async with make_engine(store, clock, [BUGGY]) as engine:
        eid = await _stopped_execution(store, engine)
        await engine.register("labels", renamed)
        before = (await store.get_execution(eid), await store.get_history(eid))
        with pytest.raises(errors.FlowResumeConflict) as caught:
            await engine.resume(eid, go=True)
        assert (await store.get_execution(eid), await store.get_history(eid)) == before
    codes = sorted((c.code, c.path) for c in caught.value.report.conflicts)
    assert ("F0101", "total") in codes
    assert "F0101 at 'total'" in str(caught.value)


async def test_answer_records_for_a_node_and_resume_takes_it(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [BUGGY]) as engine:
        eid = await _stopped_execution(store, engine)
        before = await store.get_history(eid)
        with pytest.raises(errors.FlowUnknownNode, match="the flow has no node 'colour'"):
            await engine.answer(eid, "colour", "red")
        with pytest.raises(errors.FlowInputError, match="Input should be a valid string"):
            await engine.answer(eid, "label", 42)
        with pytest.raises(errors.FlowInputError, match="records no value"):
            await engine.answer(eid, "ship", "shipped")
        assert await store.get_history(eid) == before

        await engine.answer(eid, "label", "written by hand", actor="ops")
        with pytest.raises(errors.FlowAlreadyAnswered):
            await engine.answer(eid, "label", "again")
        report = await engine.resume(eid)
        assert (report.next_node, report.conflicts) == ("ship", [])
        await engine.resume(eid, go=True)
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert (await store.get_field(eid, "label")).decode() == "written by hand"
    assert CALLS == ["total", "buggy_label"]
    answered = [
        dict(e.data) for e in (await store.get_history(eid)).events if e.kind == spi.EventKind.ANSWERED
    ]
    assert answered == [{"node": "label", "actor": "ops"}]


async def test_end_fails_it_with_no_undos(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [BUGGY]) as engine:
        eid = await _stopped_execution(store, engine)
        await engine.end(eid, "refunded by phone", actor="ops")
        state = await store.get_execution(eid)
        with pytest.raises(errors.FlowExecutionTerminal):
            await engine.end(eid, "again")
        with pytest.raises(errors.FlowExecutionTerminal):
            await engine.resume(eid)
    assert (state.status, state.waits) == (spi.Failed("refunded by phone", "Ended"), {})
    assert seed.LEDGER == [("charge", "o-1017", "1200")]  # the charge was not refunded
    ended = [dict(e.data) for e in (await store.get_history(eid)).events if e.kind == spi.EventKind.ENDED]
    assert ended == [{"reason": "refunded by phone", "actor": "ops"}]


async def test_verbs_refuse_what_they_cannot_apply_to(store: spi.FlowStore, clock: ManualClock) -> None:
    hold = asyncio.Event()

    async def slow(ctx: object) -> int:
        await hold.wait()
        return 1

    busy = Flow.init("busy").output("slow", slow, type=int)
    async with make_engine(store, clock, [seed.awaiting_order, busy]) as engine:
        waiting = await engine.workflows.start("fulfilment")
        await until(store, waiting, waiting_for("order"))
        with pytest.raises(errors.FlowNotStopped, match="is not stopped \\(running\\)"):
            await engine.answer(waiting, "total", 1)
        with pytest.raises(errors.FlowExecutionNotFound):
            await engine.end("nope", "gone")
        with pytest.raises(errors.FlowExecutionNotFound):
            await engine.resume("nope")

        running = await engine.workflows.start("busy")
        await until(store, running, lambda s: s.executor is not None)
        with pytest.raises(errors.FlowClaimHeld, match=f"held by {engine.executor_id}"):
            await engine.end(running, "impatient")
        hold.set()
        assert (await until(store, running)).status == spi.Completed()
