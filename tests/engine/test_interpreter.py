"""The replay interpreter, node kind by node kind: a first run records, a replay skips what is recorded."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from flowdeck.engine import Flow, Loop, Schedule
from flowdeck.engine.interpreter import AttemptReport, assemble_record, run_attempt
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import THREE_NODES
from tests.engine.interp_support import Calls, CountingClaimed, Crash, World, world_fixture  # noqa: F401


class Order(BaseModel):
    id: str
    cents: int


async def test_outputs_and_steps_run_once_each_and_complete(world: World) -> None:
    calls = Calls()
    flow = (
        Flow.init("f")
        .input("order", Order)
        .output("total", lambda ctx: calls.hit("total", ctx.order.cents * 2))
        .step("ship", lambda ctx: calls.hit("ship"))
        .output("label", lambda ctx: calls.hit("label", f"{ctx.order.id}:{ctx.total}"))
    )
    eid = await world.start(flow, order=Order(id="o1", cents=5))
    report = await world.attempt(flow, eid)
    assert report == AttemptReport(eid, "completed", "completed")
    assert await world.fields(eid) == {"order": {"id": "o1", "cents": 5}, "total": 10, "label": "o1:10"}
    assert calls == {"total": 1, "ship": 1, "label": 1}
    assert await world.kinds(eid) == THREE_NODES
    state = await world.state(eid)
    assert (state.status, state.executor, state.waits) == (spi.Completed(), None, {})


async def test_a_crash_replays_recorded_nodes_without_running_them(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def ship(ctx: object) -> None:
        calls.hit("ship")
        if crash.pop("armed", False):
            raise Crash()

    flow = (
        Flow.init("f")
        .output("a", lambda ctx: calls.hit("a", 1))
        .step("ship", ship)
        .output("b", lambda ctx: calls.hit("b", ctx.a + 1))
    )
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert await world.fields(eid) == {"a": 1}
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"a": 1, "ship": 2, "b": 1}
    assert await world.fields(eid) == {"a": 1, "b": 2}


async def test_values_are_seen_after_their_round_trip_on_the_first_run(world: World) -> None:
    seen: list[object] = []
    flow = (
        Flow.init("f")
        .output("order", lambda ctx: {"id": "o1", "cents": 3}, type=Order)
        .output("tuple", lambda ctx: (1, 2), type=tuple[int, int])
        .output("as_list", lambda ctx: [1, 2])
        .step("look", lambda ctx: seen.extend([ctx.order, ctx.tuple, ctx.as_list]))
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert seen == [Order(id="o1", cents=3), (1, 2), [1, 2]]


async def test_an_input_parks_then_a_signal_wakes_it_and_the_row_is_discharged(world: World) -> None:
    flow = (
        Flow.init("f").input("approval", bool).output("result", lambda ctx: "yes" if ctx.approval else "no")
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report == AttemptReport(eid, "suspended", "approval")
    state = await world.state(eid)
    assert (state.waits, state.executor) == ({"approval": spi.WakeOnField("approval")}, None)
    assert (await world.attempt(flow, eid)).outcome == "not-ready"
    received = spi.Event(
        spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "approval"}
    )
    await world.store.signal(eid, "approval", spi.FieldData.of(True, "bool"), received)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"approval": True, "result": "yes"}
    kinds = await world.kinds(eid)
    assert kinds.count("InputWaiting") == 1
    assert kinds.count("InputDischarged") == 1


async def test_a_start_seeded_input_records_no_input_events(world: World) -> None:
    flow = Flow.init("f").input("x", int).output("y", lambda ctx: ctx.x + 1)
    eid = await world.start(flow, x=41)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    kinds = await world.kinds(eid)
    assert not [k for k in kinds if k.startswith("Input")]
    assert (await world.fields(eid))["y"] == 42


async def test_a_sleep_keeps_its_deadline_across_replays_and_completes_when_due(world: World) -> None:
    calls = Calls()
    flow = (
        Flow.init("f")
        .input("go", bool)
        .sleep("nap", timedelta(hours=1))
        .step("after", lambda ctx: calls.hit("after"))
    )
    eid = await world.start(flow)
    start = world.clock.now()
    assert (await world.attempt(flow, eid)).outcome == "suspended"  # waits for go
    received = spi.Event(spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "go"})
    await world.store.signal(eid, "go", spi.FieldData.of(True, "bool"), received)
    await world.clock.advance(timedelta(minutes=10))
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "nap")
    deadline = start + timedelta(minutes=10, hours=1)
    assert (await world.state(eid)).waits == {"nap": spi.WakeAt(deadline)}
    await world.clock.advance(timedelta(minutes=30))
    assert (await world.attempt(flow, eid)).outcome == "not-ready"
    await world.clock.advance(timedelta(minutes=31))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"after": 1}
    started = await world.events(eid, spi.EventKind.SLEEP_STARTED)
    assert [e.data["until"] for e in started] == [deadline.isoformat()]
    assert len(await world.events(eid, spi.EventKind.SLEEP_COMPLETED)) == 1


async def test_a_dispatch_records_its_choice_before_the_branch_runs(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def big(ctx: object) -> str:
        calls.hit("big")
        if crash.pop("armed", False):
            raise Crash()
        return "big"

    limit = {"value": 10}
    flow = (
        Flow.init("f")
        .input("n", int)
        .dispatch("size")
        .when(lambda ctx: ctx.n > limit["value"], big, name="large")
        .otherwise(lambda ctx: calls.hit("small", "small"), name="small")
        .output("echo", lambda ctx: ctx.size)
    )
    eid = await world.start(flow, n=50)
    await world.crash(flow, eid)
    assert await world.fields(eid) == {"n": 50, "size#chosen": "large"}
    limit["value"] = 100  # the conditions now choose otherwise: the recorded choice stands
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"n": 50, "size#chosen": "large", "size": "big", "echo": "big"}
    assert calls == {"big": 2}
    chosen = await world.events(eid, spi.EventKind.BRANCH_CHOSEN)
    assert [dict(e.data) for e in chosen] == [{"dispatch_name": "size", "branch_name": "large"}]


async def test_a_stateful_loop_records_only_its_value(world: World) -> None:
    flow = Flow.init("f").loop(
        "count", lambda state, ctx: Loop.done(state) if state >= 3 else Loop.again(state + 1), initial=0
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"count": 3}


async def test_a_stateless_loop_runs_until_done(world: World) -> None:
    seen = Calls()
    flow = Flow.init("f").loop(
        "poll", lambda ctx: Loop.done("ok") if seen.hit("poll", seen["poll"]) >= 3 else Loop.again()
    )
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["poll"] == "ok"


async def test_loop_on_checkpoints_each_iteration_and_sleeps_between(world: World) -> None:
    calls = Calls()

    def body(state: int, ctx: object) -> object:
        calls.hit(f"iteration {state}")
        return Loop.done(state * 10) if state == 2 else Loop.again(state + 1)

    flow = Flow.init("f").loop_on("tick", Schedule.fixed(timedelta(minutes=5)), body, initial=0)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "tick##0")
    assert await world.fields(eid) == {"tick#0": 1}
    await world.clock.advance(timedelta(minutes=5))
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "tick##1")
    assert await world.fields(eid) == {"tick#0": 1, "tick#1": 2}
    await world.clock.advance(timedelta(minutes=5))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"tick#0": 1, "tick#1": 2, "tick": 20}
    assert calls == {"iteration 0": 1, "iteration 1": 1, "iteration 2": 1}


async def test_loop_on_out_of_schedule_fails_the_node(world: World) -> None:
    flow = Flow.init("f").loop_on(
        "tick", Schedule.fixed(timedelta(0)).take(1), lambda s, ctx: Loop.again(s), initial=0
    )
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report.outcome == "failed"
    status = await world.status(eid)
    assert isinstance(status, spi.Failed)
    assert status.kind == "FlowLoopExhausted"


async def test_foreach_keeps_collection_order_and_records_count_and_items(world: World) -> None:
    async def double(item: int) -> int:
        await asyncio.sleep(0.001 * (5 - item))  # later items finish first
        return item * 2

    flow = Flow.init("f").foreach("doubled", lambda ctx: [1, 2, 3, 4], double)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {
        "doubled~count": 4,
        "doubled~0": 2,
        "doubled~1": 4,
        "doubled~2": 6,
        "doubled~3": 8,
        "doubled": [2, 4, 6, 8],
    }


async def test_foreach_crash_at_item_k_resumes_at_k(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def visit(item: int, ctx: object) -> str:
        calls.hit(f"item {item}")
        if item == 2 and crash.pop("armed", False):
            raise Crash()
        return f"v{item}"

    flow = Flow.init("f").foreach("visit", lambda ctx: [0, 1, 2, 3], visit, concurrency=1)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert await world.fields(eid) == {"visit~count": 4, "visit~0": "v0", "visit~1": "v1"}
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"item 0": 1, "item 1": 1, "item 2": 2, "item 3": 1}
    assert (await world.fields(eid))["visit"] == ["v0", "v1", "v2", "v3"]


async def test_foreach_concurrency_bounds_items_in_flight(world: World) -> None:
    in_flight = {"now": 0, "max": 0}
    full = asyncio.Event()  # the first items hold on until the bound is reached, whatever the writes cost

    async def work(item: int) -> int:
        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        if in_flight["now"] == 3:
            full.set()
        await full.wait()
        in_flight["now"] -= 1
        return item

    flow = Flow.init("f").foreach("w", lambda ctx: list(range(8)), work, concurrency=3)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert in_flight["max"] == 3


async def test_foreach_whose_collection_changed_size_is_refused(world: World) -> None:
    size = {"n": 3}
    crash = {"armed": True}

    def item(i: int) -> int:
        if i == 1 and crash.pop("armed", False):
            raise Crash()
        return i

    flow = Flow.init("f").foreach("items", lambda ctx: list(range(size["n"])), item, concurrency=1)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    size["n"] = 5
    assert (await world.attempt(flow, eid)).outcome == "failed"
    status = await world.status(eid)
    assert isinstance(status, spi.Failed)
    assert status.kind == "FlowNondeterministicCollection"


child = Flow.init("child").input("amount", int).output("doubled", lambda ctx: ctx.amount * 2)


async def test_subflow_records_child_inputs_at_entry_and_keys_child_nodes(world: World) -> None:
    calls = Calls()
    flow = (
        Flow.init("f")
        .input("cents", int)
        .subflow("review", child, lambda ctx: calls.hit("mapper", {"amount": ctx.cents}))
        .output("seen", lambda ctx: ctx.review.doubled)
    )
    eid = await world.start(flow, cents=4)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"cents": 4, "review~amount": 4, "review~doubled": 8, "seen": 8}
    supplied = await world.events(eid, spi.EventKind.INPUT_SUPPLIED)
    assert [e.data["input_name"] for e in supplied] == ["review~amount"]
    record = assemble_record(flow, await world.store.get_all_fields(eid))
    assert record._asdict() == {"cents": 4, "review": {"amount": 4, "doubled": 8}, "seen": 8}


async def test_a_recorded_child_input_is_not_mapped_again(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def doubled(ctx: object) -> int:
        if crash.pop("armed", False):
            raise Crash()
        return 0

    inner = Flow.init("child").input("amount", int).output("doubled", doubled)
    flow = Flow.init("f").subflow("review", inner, lambda ctx: calls.hit("mapper", {"amount": 1}))
    eid = await world.start(flow)
    await world.crash(flow, eid)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"mapper": 1}


async def test_zip_runs_both_branches_and_merges_records(world: World) -> None:
    a = Flow.init("a").output("x", lambda ctx: 1)
    b = Flow.init("b").output("y", lambda ctx: 2)
    flow = a.zip(b).and_then(Flow.init("t").output("z", lambda ctx: ctx.x + ctx.y))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.fields(eid) == {"x": 1, "y": 2, "z": 3}


async def test_zip_parks_on_every_branch_wait(world: World) -> None:
    a = Flow.init("a").input("left", int)
    b = Flow.init("b").sleep("pause", timedelta(minutes=1))
    flow = a.zip(b)
    eid = await world.start(flow)
    report = await world.attempt(flow, eid)
    assert report == AttemptReport(eid, "suspended", "left, pause")
    assert set((await world.state(eid)).waits) == {"left", "pause"}


def race_flow(calls: Calls) -> Flow:
    approval = (
        Flow.init("approval")
        .input("approved", bool)
        .output("decision", lambda ctx: calls.hit("approved", "approved" if ctx.approved else "rejected"))
    )
    timeout = (
        Flow.init("timeout")
        .sleep("deadline", timedelta(hours=1))
        .output("decision", lambda ctx: calls.hit("timed out", "timed out"))
    )
    return Flow.race(approval, timeout).and_then(Flow.init("t").output("final", lambda ctx: ctx.decision))


async def test_race_approval_before_the_deadline_wins_and_retires_the_sleep(world: World) -> None:
    calls = Calls()
    flow = race_flow(calls)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "approved, deadline")
    received = spi.Event(
        spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "approved"}
    )
    await world.store.signal(eid, "approved", spi.FieldData.of(True, "bool"), received)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["final"] == "approved"
    assert calls == {"approved": 1}
    assert (await world.state(eid)).waits == {}


async def test_race_deadline_before_the_approval_wins(world: World) -> None:
    calls = Calls()
    flow = race_flow(calls)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    await world.clock.advance(timedelta(hours=1))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["final"] == "timed out"
    assert calls == {"timed out": 1}
    received = spi.Event(
        spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "approved"}
    )
    outcome = await world.store.signal(eid, "approved", spi.FieldData.of(True, "bool"), received)
    assert outcome == spi.AlreadyTerminal(spi.Completed())


async def test_ctx_offers_key_execution_id_and_attempt(world: World) -> None:
    seen: dict[str, object] = {}

    def look(ctx: object) -> None:
        seen.update(key=ctx.key, eid=ctx.execution_id, attempt=ctx.attempt)  # type: ignore[attr-defined]

    inner = Flow.init("child").step("look", look)
    flow = Flow.init("f").subflow("sub", inner, lambda ctx: {})
    eid = await world.start(flow, "exec-7")
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert seen == {"key": "exec-7/sub~look", "eid": "exec-7", "attempt": 0}


async def test_sync_bodies_run_in_a_thread_and_async_ones_are_awaited(world: World) -> None:
    import threading

    threads: dict[str, bool] = {}

    def sync_body(ctx: object) -> int:
        threads["sync"] = threading.current_thread() is threading.main_thread()
        return 1

    async def async_body(ctx: object) -> int:
        threads["async"] = threading.current_thread() is threading.main_thread()
        return 2

    flow = Flow.init("f").output("a", sync_body).output("b", async_body).output("c", lambda: 3)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert threads == {"sync": False, "async": True}
    assert await world.fields(eid) == {"a": 1, "b": 2, "c": 3}


async def test_a_lapsed_claim_writes_nothing_more(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1)
    eid = await world.start(flow)
    stale = await world.claim(flow, eid)
    assert stale is not None
    await world.clock.advance(timedelta(seconds=31))
    from flowdeck.engine.interpreter import run_attempt

    before = await world.kinds(eid)
    report = await run_attempt(flow, stale, store=world.store, clock=world.clock, executor_id="ex-1")
    assert report.outcome == "claim-lost"
    assert await world.kinds(eid) == before
    assert await world.fields(eid) == {}


async def test_recording_a_node_is_one_write(world: World) -> None:
    flow = Flow.init("f").input("order", Order)
    for i in range(40):
        flow = flow.output(f"o{i}", lambda ctx, i=i: i) if i % 2 else flow.step(f"s{i}", lambda ctx: None)
    eid = await world.start(flow, order=Order(id="o", cents=1))
    assert (await world.attempt(flow, eid)).outcome == "completed"
    # one per node (a node's record rides on the write that records the next node's start, before its
    # body), the attempt's first start, and its end
    assert sum(world.writes.values()) == 42
    assert sum(world.writes.values()) / 40 <= 1.05
    started = await world.events(eid, spi.EventKind.STEP_STARTED)
    assert len(started) == 40


async def test_a_steps_completion_rides_on_the_next_nodes_start_and_the_last_on_the_end(world: World) -> None:
    calls = Calls()
    flow = Flow.init("f")
    for i in range(20):
        flow = flow.step(f"s{i}", lambda ctx, i=i: calls.hit(f"s{i}"))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert world.writes == {"append_event": 20, "finish": 1}  # each start, durable before its body
    kinds = await world.kinds(eid)
    assert kinds.count("StepCompleted") == 20
    assert kinds[-4:] == ["StepStarted", "StepCompleted", "ExecutionReleased", "Completed"]


async def test_a_deferred_completion_is_durable_before_the_next_body_runs(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def second(ctx: object) -> None:
        calls.hit("second")
        if crash.pop("armed", False):
            raise Crash()

    flow = Flow.init("f").step("first", lambda ctx: calls.hit("first")).step("second", second)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    completed = await world.events(eid, spi.EventKind.STEP_COMPLETED)
    assert [e.data["step_name"] for e in completed] == ["first"]
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == {"first": 1, "second": 2}


async def test_a_parked_input_and_its_wake_cost_one_write_each(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1).input("x", int).output("b", lambda ctx: ctx.x)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "suspended"
    # a's start (before its body), a's value, the wait row, the end
    assert world.writes == {"append_event": 1, "record_progress": 1, "record_wait": 1, "finish": 1}
    received = spi.Event(spi.EventKind.INPUT_RECEIVED, "f", eid, world.clock.now(), {"input_name": "x"})
    await world.store.signal(eid, "x", spi.FieldData.of(5, "int"), received)
    world.writes.clear()
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert world.writes == {"append_event": 1, "record_progress": 1, "finish": 1}


async def test_gather_runs_every_branch(world: World) -> None:
    flows = [Flow.init(f"b{i}").output(f"v{i}", lambda ctx, i=i: i) for i in range(3)]
    flow = Flow.gather(*flows).and_then(Flow.init("t").output("sum", lambda ctx: ctx.v0 + ctx.v1 + ctx.v2))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert (await world.fields(eid))["sum"] == 3


async def test_a_failing_zip_branch_decides_at_once(world: World) -> None:
    from flowdeck.engine import FlowDomainError

    class Refused(FlowDomainError):
        pass

    def refuse(ctx: object) -> None:
        raise Refused("no")

    flow = Flow.init("a").step("bad", refuse).zip(Flow.init("b").input("never", int))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "failed"
    assert await world.status(eid) == spi.Failed("no", "Refused")


async def test_a_race_arm_failing_while_the_other_waits_parks(world: World) -> None:
    from flowdeck.engine import FlowDomainError

    class Refused(FlowDomainError):
        pass

    def refuse(ctx: object) -> None:
        raise Refused("no")

    flow = Flow.race(Flow.init("a").output("r", refuse), Flow.init("b").input("r_in", int))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)) == AttemptReport(eid, "suspended", "r_in")


async def test_a_race_whose_arms_all_fail_fails(world: World) -> None:
    from flowdeck.engine import FlowDomainError

    class Refused(FlowDomainError):
        pass

    def refuse(ctx: object) -> None:
        raise Refused("no")

    flow = Flow.race(Flow.init("a").output("r", refuse), Flow.init("b").output("r", refuse))
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "failed"


async def test_a_runner_wraps_the_walk(world: World) -> None:
    import contextvars

    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")

    async def runner(walk: Any) -> Any:
        token = tenant.set("acme")
        try:
            return await walk()
        finally:
            tenant.reset(token)

    flow = Flow.init("f").output("who", lambda ctx: tenant.get())
    eid = await world.start(flow)
    claimed = await world.claim(flow, eid)
    assert claimed is not None
    from flowdeck.engine.interpreter import run_attempt

    report = await run_attempt(
        flow, claimed, store=world.store, clock=world.clock, executor_id="ex-1", runner=runner
    )
    assert report.outcome == "completed"
    assert (await world.fields(eid))["who"] == "acme"


async def test_a_loop_announces_its_start_once(world: World) -> None:
    flow = Flow.init("f").loop("n", lambda s, ctx: Loop.done(s) if s == 5 else Loop.again(s + 1), initial=0)
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert len(await world.events(eid, spi.EventKind.STEP_STARTED)) == 1
    assert (await world.fields(eid))["n"] == 5


async def test_a_replay_after_every_node_kind_runs_no_recorded_body_again(world: World) -> None:
    calls = Calls()
    crash = {"armed": True}

    def last(ctx: Any) -> str:
        calls.hit("last")
        if crash.pop("armed", False):
            raise Crash()
        return f"{ctx.loop}/{ctx.ticks}/{ctx.pick}/{ctx.each}/{ctx.sub.y}/{ctx.left}/{ctx.right}"

    inner = Flow.init("c").input("x", int).output("y", lambda ctx: calls.hit("child", ctx.x + 1))
    flow = (
        Flow.init("f")
        .input("n", int)
        .loop(
            "loop", lambda s, ctx: calls.hit("loop", Loop.done(s) if s >= 2 else Loop.again(s + 1)), initial=0
        )
        .loop_on(
            "ticks",
            Schedule.fixed(timedelta(0)),
            lambda s, ctx: calls.hit("tick", Loop.done(s) if s >= 1 else Loop.again(s + 1)),
            initial=0,
        )
        .dispatch("pick")
        .when(lambda ctx: ctx.n > 0, lambda ctx: calls.hit("pos", "pos"), name="pos")
        .otherwise(lambda ctx: "neg")
        .foreach("each", lambda ctx: [1, 2], lambda i: calls.hit("item", i * 10))
        .subflow("sub", inner, lambda ctx: calls.hit("mapper", {"x": ctx.n}))
        .and_then(
            Flow.init("l")
            .output("left", lambda ctx: calls.hit("left", "L"))
            .zip(Flow.init("r").output("right", lambda ctx: calls.hit("right", "R")))
        )
        .output("last", last)
    )
    eid = await world.start(flow, n=3)
    await world.crash(flow, eid)
    first = Calls(calls)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert calls == first + Calls({"last": 1})
    assert (await world.fields(eid))["last"] == "2/1/pos/[10, 20]/4/L/R"


class ReadCountingStore(MemoryStore):
    """MemoryStore, counting the record reads an attempt makes."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.reads = 0

    async def get_all_fields(self, execution_id: str) -> Any:
        self.reads += 1
        return await super().get_all_fields(execution_id)

    async def get_history(self, execution_id: str, limit: int | None = None, offset: int = 0) -> Any:
        self.reads += 1
        return await super().get_history(execution_id, limit, offset)


class Prefetching(CountingClaimed):
    """A handle whose store read the record with the claim (what a store may offer for the cost rule)."""

    def __init__(self, inner: spi.Claimed, ledger: Any) -> None:
        super().__init__(inner, Counter())
        self.ledger = ledger

    async def prefetched_ledger(self) -> Any:
        return self.ledger


async def test_the_record_is_read_once_per_attempt_or_not_at_all_when_prefetched() -> None:
    clock = ManualClock()
    store = ReadCountingStore(clock)
    world = World(store, clock)
    flow = Flow.init("f").input("x", int).output("y", lambda ctx: ctx.x * 2)
    eid = await world.start(flow, x=2)
    claimed = await world.claim(flow, eid)
    assert claimed is not None
    ledger = (dict(store.data.fields[eid]), list(store.data.events[eid]))
    store.reads = 0
    report = await run_attempt(
        flow, Prefetching(claimed.inner, ledger), store=store, clock=clock, executor_id="ex-1"
    )
    assert report.outcome == "completed"
    assert store.reads == 0
    assert (await world.fields(eid))["y"] == 4

    other = await world.start(flow, x=5)
    store.reads = 0
    assert (await world.attempt(flow, other)).outcome == "completed"
    assert store.reads == 2
