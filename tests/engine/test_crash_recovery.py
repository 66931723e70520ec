"""Crash recovery: a crash costs at most the node in flight. Engines here "crash" by leaving with no
grace (their attempts are cancelled and write nothing more, exactly what a killed process leaves behind);
the PostgreSQL cases kill a separate OS process."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from engine.flow import Flow
from examples import seed
from examples.seed import Approval, Order
from store import spi
from store.clock import ManualClock, settle
from tests.engine.engine_support import LEASE, kinds, make_engine, until, waiting_for

ORDER = seed.sample_order()


async def test_a_crash_mid_node_resumes_at_that_node(store: spi.FlowStore, clock: ManualClock) -> None:
    calls: Counter[str] = Counter()
    hang = asyncio.Event()

    def first(ctx: object) -> int:
        calls["first"] += 1
        return 1

    async def second(ctx: object) -> int:
        calls["second"] += 1
        if calls["second"] == 1:
            await hang.wait()  # the process dies here
        return ctx.first + 1  # type: ignore[attr-defined]

    def third(ctx: object) -> int:
        calls["third"] += 1
        return ctx.second + 1  # type: ignore[attr-defined]

    flow = (
        Flow.init("crash")
        .output("first", first, type=int)
        .output("second", second, type=int)
        .output("third", third, type=int)
    )
    async with make_engine(store, clock, [flow]) as doomed:
        eid = await doomed.workflows.start("crash")
        await until(store, eid, lambda s: calls["second"] == 1)
    async with make_engine(store, clock, [flow]) as survivor:
        await settle()  # its first poll finds the row still claimed, and blocks until the lease ends
        await clock.advance(LEASE)
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert calls == Counter(first=1, second=2, third=1)
    fields = await store.get_all_fields(eid)
    assert {name: fields[name].decode() for name in ("first", "second", "third")} == {
        "first": 1,
        "second": 2,
        "third": 3,
    }
    claims = [
        e.data["executor_id"]
        for e in (await store.get_history(eid)).events
        if e.kind.value == "ExecutionClaimed"
    ]
    assert claims == [doomed.executor_id, survivor.executor_id]


async def test_two_engines_never_run_a_completed_node_twice(store: spi.FlowStore, clock: ManualClock) -> None:
    lock = threading.Lock()
    ran: Counter[tuple[str, str]] = Counter()

    def node(name: str) -> Callable[[object], str]:
        def body(ctx: object) -> str:
            with lock:
                ran[(ctx.execution_id, name)] += 1  # type: ignore[attr-defined]
            return name

        return body

    flow = (
        Flow.init("busy")
        .output("a", node("a"), type=str)
        .step("b", node("b"))
        .output("c", node("c"), type=str)
    )
    first = make_engine(store, clock, [flow], workers=2, batch_size=2)
    second = make_engine(store, clock, [flow], workers=2, batch_size=2)
    async with first, second:
        ids = [await first.workflows.start("busy") for _ in range(20)]
        for eid in ids:
            assert (await until(store, eid)).status == spi.Completed()
    assert ran == Counter({(eid, name): 1 for eid in ids for name in "abc"})


async def test_a_sleeps_deadline_survives_restarts(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.cooling]) as engine:
        eid = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        asleep = await until(store, eid, waiting_for("delivery-window"))
    deadline = spi.WakeAt(clock.now() + timedelta(hours=48))
    assert asleep.waits == {"delivery-window": deadline}
    await clock.advance(timedelta(hours=24))
    async with make_engine(store, clock, [seed.cooling]):
        await clock.advance(timedelta(hours=12))
        await settle()
        still = await store.get_execution(eid)
        assert (still.status, still.waits, still.executor) == (
            spi.Running(),
            {"delivery-window": deadline},
            None,
        )
    async with make_engine(store, clock, [seed.cooling]):
        await clock.advance(timedelta(hours=12))
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert seed.LEDGER == [("ship", "o-1017"), ("notify", "o-1017", "how did we do?")]
    sleeps = [e for e in (await store.get_history(eid)).events if e.kind.value == "SleepStarted"]
    assert [e.data["until"] for e in sleeps] == [deadline.at.isoformat()]


async def test_a_cancel_while_waiting_for_an_input_unwinds(store: spi.FlowStore, clock: ManualClock) -> None:
    flow = (
        Flow.init("approved-shipping")
        .input("order", Order)
        .output(
            "charge",
            lambda ctx: seed.charge_card(ctx.order.id, 1200),
            type=str,
            compensate=lambda ctx: seed.refund_charge(ctx.charge),
        )
        .input("approval", Approval)
        .step("ship", lambda ctx: seed.ship(ctx.order))
    )
    async with make_engine(store, clock, [flow]) as engine:
        eid = await engine.workflows.start("approved-shipping", inputs={"order": ORDER})
        await until(store, eid, waiting_for("approval"))
        assert (
            await engine.executions.cancel(eid, "customer changed their mind", actor="ada") == spi.Accepted()
        )
        state = await until(store, eid)
    assert state.status == spi.Cancelled("customer changed their mind")
    assert seed.LEDGER == [("charge", "o-1017", "1200"), ("refund", "ch-o-1017-1200")]
    history = await kinds(store, eid)
    assert history[history.index("CancelRequested") :] == [
        "CancelRequested",
        "ExecutionClaimed",
        "ExecutionResumed",
        "CompensationStarted",
        "NodeCompensated",
        "CompensationCompleted",
        "ExecutionReleased",
        "Cancelled",
    ]
