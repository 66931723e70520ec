"""The dry run behind resume: replay a new version in memory, report kept, next and conflicts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flowdeck.engine import Flow
from flowdeck.engine.dry_run import Conflict, ResumeReport, dry_run
from flowdeck.store import spi
from tests.engine.interp_support import Calls, World, world_fixture  # noqa: F401


def broken(ctx: Any) -> None:
    raise ValueError("bug")


async def stopped_at_ship(world: World, flow: Flow, **inputs: Any) -> str:
    eid = await world.start(flow, **inputs)
    assert (await world.attempt(flow, eid)).outcome == "stopped"
    return eid


async def snapshot(world: World, eid: str) -> tuple[Any, ...]:
    return (await world.state(eid), await world.fields(eid), await world.kinds(eid))


async def test_kept_and_next_node_and_no_body_runs(world: World) -> None:
    calls = Calls()
    old = (
        Flow.init("f")
        .input("n", int)
        .output("a", lambda ctx: ctx.n + 1)
        .step("ship", broken)
        .output("b", lambda ctx: 0)
    )
    eid = await stopped_at_ship(world, old, n=1)
    new = (
        Flow.init("f")
        .input("n", int)
        .output("a", lambda ctx: calls.hit("a", 0))
        .step("ship", lambda ctx: calls.hit("ship"))
        .output("b", lambda ctx: calls.hit("b", 0))
    )
    before = await snapshot(world, eid)
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report == ResumeReport(kept=["n", "a"], next_node="ship", conflicts=[])
    assert calls == {}
    assert await snapshot(world, eid) == before


async def test_a_recorded_key_the_new_version_never_asks_for_is_f0101(world: World) -> None:
    old = Flow.init("f").output("legacy", lambda ctx: 1).step("ship", broken)
    eid = await stopped_at_ship(world, old)
    new = Flow.init("f").step("ship", lambda ctx: None)
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report.conflicts == [
        Conflict("F0101", "legacy", "recorded, but the new version has no node that asks for it")
    ]
    assert report.next_node == "ship"


async def test_another_branch_is_f0102(world: World) -> None:
    old = (
        Flow.init("f")
        .input("n", int)
        .dispatch("size")
        .when(lambda ctx: ctx.n > 10, lambda ctx: "large", name="large")
        .otherwise(lambda ctx: "small", name="small")
        .step("ship", broken)
    )
    eid = await stopped_at_ship(world, old, n=50)
    new = (
        Flow.init("f")
        .input("n", int)
        .dispatch("size")
        .when(lambda ctx: ctx.n > 100, lambda ctx: "large", name="large")
        .otherwise(lambda ctx: "small", name="small")
        .step("ship", lambda ctx: None)
    )
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report.conflicts == [Conflict("F0102", "size", "the record chose branch 'large', now 'small'")]
    assert report.next_node == "size"


async def test_a_changed_collection_is_f0102(world: World) -> None:
    old = Flow.init("f").foreach("items", lambda ctx: [1, 2], lambda i: i).step("ship", broken)
    eid = await stopped_at_ship(world, old)
    new = Flow.init("f").foreach("items", lambda ctx: [1, 2, 3], lambda i: i).step("ship", lambda ctx: None)
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report.conflicts == [Conflict("F0102", "items", "the record has 2 items, now 3")]


async def test_other_child_inputs_are_f0102(world: World) -> None:
    child = Flow.init("c").input("amount", int).output("x", lambda ctx: ctx.amount)
    old = Flow.init("f").subflow("sub", child, lambda ctx: {"amount": 5}).step("ship", broken)
    eid = await stopped_at_ship(world, old)
    new = Flow.init("f").subflow("sub", child, lambda ctx: {"amount": 6}).step("ship", lambda ctx: None)
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report.conflicts == [Conflict("F0102", "sub~amount", "the child was given 5, now 6")]
    same = Flow.init("f").subflow("sub", child, lambda ctx: {"amount": 5}).step("ship", lambda ctx: None)
    report = await dry_run(same, world.store, eid, clock=world.clock)
    assert report == ResumeReport(kept=["sub~amount", "sub~x"], next_node="ship", conflicts=[])


async def test_a_new_node_before_the_stop_is_what_runs_next(world: World) -> None:
    old = Flow.init("f").output("a", lambda ctx: 1).step("ship", broken)
    eid = await stopped_at_ship(world, old)
    new = (
        Flow.init("f").output("a", lambda ctx: 1).output("new", lambda ctx: 2).step("ship", lambda ctx: None)
    )
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert report == ResumeReport(kept=["a"], next_node="new", conflicts=[])


async def test_a_flow_entirely_recorded_has_no_next_node(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1).sleep("nap", timedelta(seconds=1))
    eid = await world.start(flow)
    await world.attempt(flow, eid)
    await world.clock.advance(timedelta(seconds=1))
    await world.attempt(flow, eid)
    assert await world.status(eid) == spi.Completed()
    report = await dry_run(flow, world.store, eid, clock=world.clock)
    assert report == ResumeReport(kept=["a", "nap"], next_node=None, conflicts=[])


async def test_a_waiting_input_is_the_next_node(world: World) -> None:
    flow = Flow.init("f").output("a", lambda ctx: 1).input("approval", bool)
    eid = await world.start(flow)
    await world.attempt(flow, eid)
    report = await dry_run(flow, world.store, eid, clock=world.clock)
    assert report == ResumeReport(kept=["a"], next_node="approval", conflicts=[])


async def test_a_recorded_value_of_another_type_is_f0102(world: World) -> None:
    old = Flow.init("f").output("a", lambda ctx: "text").step("ship", broken)
    eid = await stopped_at_ship(world, old)
    new = Flow.init("f").output("a", lambda ctx: 1, type=int).step("ship", lambda ctx: None)
    report = await dry_run(new, world.store, eid, clock=world.clock)
    assert [(c.code, c.path) for c in report.conflicts] == [("F0102", "a")]
    assert report.next_node == "a"
