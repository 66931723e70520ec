"""A start's priority (`store.claim_order`): kept on the execution (or the workflow's `Meta.priority`),
refused out of range with nothing written, and honoured by the workers' claim, on every store."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from flowdeck.engine import errors
from flowdeck.engine.flow import Flow, Meta
from flowdeck.store import claim_order, spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until


def waiting(meta: Meta | None = None) -> Flow:
    return Flow.init("waiting", meta=meta).input("go", str)


async def test_a_start_keeps_its_priority_or_the_workflows(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [waiting(Meta(priority=7))]) as engine:
        given = await engine.workflows.start("waiting", priority=-30)
        default = await engine.workflows.start("waiting")
    assert (await store.get_execution(given)).priority == -30
    assert (await store.get_execution(default)).priority == 7


@pytest.mark.parametrize("priority", [101, -101, True, 2.0, "9"])
async def test_a_priority_out_of_range_is_refused_and_writes_nothing(
    store: spi.FlowStore, clock: ManualClock, priority: object
) -> None:
    async with make_engine(store, clock, [waiting()]) as engine:
        with pytest.raises(errors.FlowInvalidPriority, match="from -100"):
            await engine.workflows.start("waiting", execution_id="refused", priority=priority)  # type: ignore[arg-type]
    assert await store.get_execution("refused") is None


def test_a_workflow_default_out_of_range_is_refused_where_it_is_declared() -> None:
    with pytest.raises(errors.FlowInvalidPriority):
        Meta(priority=1000)


async def test_the_workers_run_the_higher_priority_first(store: spi.FlowStore, clock: ManualClock) -> None:
    """One slot, held by a hanging execution while three low and then three high executions are started;
    released, the worker claims one at a time: of its first four claims exactly one is a fair-share turn
    (the oldest ready, a low one) and three follow priority (the highs, oldest first)."""
    entered, release = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    async def hold(ctx: object) -> str:
        entered.set()
        await release.wait()
        return "held"

    def record(ctx: object) -> None:
        ran.append(ctx.execution_id)  # type: ignore[attr-defined]

    hanging = Flow.init("hanging").output("slow", hold, type=str)
    job = Flow.init("job").step("run", record)
    async with make_engine(store, clock, [hanging, job], batch_size=1) as engine:
        busy = await engine.workflows.start("hanging")
        await entered.wait()
        for n in range(3):
            await engine.workflows.start("job", execution_id=f"low{n}", priority=-10)
            await clock.advance(1)
        for n in range(3):
            await engine.workflows.start("job", execution_id=f"high{n}", priority=10)
            await clock.advance(1)
        release.set()
        await until(store, busy)
        for eid in ("low2", "high2"):
            await until(store, eid)
    first_four = ran[: claim_order.FAIR_SHARE]
    assert [e for e in ran if e.startswith("high")] == ["high0", "high1", "high2"], ran
    assert [e for e in ran if e.startswith("low")] == ["low0", "low1", "low2"], ran
    assert sorted(first_four) == ["high0", "high1", "high2", "low0"], ran


async def test_the_docs_example_claims_the_express_order_first(clock: ManualClock) -> None:
    """docs/priorities.md's fulfilment example, examples/fulfilment/express.py: started after two standard
    orders with no worker running, the express order (its workflow's default, 50) is claimed first."""
    from examples.fulfilment.express import fulfilment_express
    from examples.fulfilment.flows import fulfilment
    from examples.fulfilment.services import Item, Order
    from flowdeck.engine import schema
    from flowdeck.store.memory import MemoryStore

    store = MemoryStore(clock)
    engine = make_engine(store, clock, [fulfilment, fulfilment_express])
    for flow in (fulfilment, fulfilment_express):
        await engine.register(flow.name, flow)
    for eid, workflow in (
        ("standard-1", "fulfilment"),
        ("standard-2", "fulfilment"),
        ("express", "fulfilment-express"),
    ):
        order = Order(id=eid, customer="ada", items=[Item(sku="mug", qty=1, price=900)])
        await engine.workflows.start(workflow, execution_id=eid, inputs={"order": order})
        await clock.advance(1)
    assert (await store.get_execution("express")).priority == 50
    version = schema.structural_hash(fulfilment)  # the express flow is the same version, under its own name
    served = frozenset({("fulfilment", version), ("fulfilment-express", version)})
    [first] = await store.claim_ready(served, "worker", timedelta(seconds=30), 1, timedelta(0))
    assert first.state.execution_id == "express"
