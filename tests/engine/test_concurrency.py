"""Concurrency limits from the workflow's Meta (`engine/concurrency.py`, `store.concurrency`): the key read
from the start's inputs and kept on the execution, a bad key refused with nothing written, and the workers
never running more than the limit, on every store."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from pydantic import BaseModel

from flowdeck.engine import errors
from flowdeck.engine.concurrency import Concurrency
from flowdeck.engine.flow import Flow, Meta
from flowdeck.store import concurrency, spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until


class Order(BaseModel):
    id: str
    customer_id: int


def per_customer(body: object = None) -> Flow:
    meta = Meta(concurrency=Concurrency(limit=3, key="order.customer_id", per_key=1))
    return Flow.init("fulfil", meta=meta).input("order", Order).step("ship", body or (lambda ctx: None))


async def test_the_key_is_read_from_the_inputs_and_kept(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [per_customer()]) as engine:
        eid = await engine.workflows.start("fulfil", inputs={"order": Order(id="o1", customer_id=42)})
        await until(store, eid)
    assert (await store.get_execution(eid)).concurrency == concurrency.Limits(3, "42", 1)
    info = await store.get_workflow("fulfil")
    assert info is not None
    assert info.meta.concurrency == "3 running; 1 per order.customer_id"


async def test_a_start_without_the_keys_input_is_refused_with_nothing_written(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [per_customer()]) as engine:
        with pytest.raises(errors.FlowInputError, match="must be given at the start"):
            await engine.workflows.start("fulfil", execution_id="refused")
    assert await store.get_execution("refused") is None


@pytest.mark.parametrize(
    "declared",
    [
        {"limit": 0},
        {"limit": True},
        {"key": "order.id", "per_key": 0},
        {},
        {"key": ""},
    ],
)
def test_a_bad_declaration_is_refused_where_it_is_written(declared: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="Concurrency"):
        Concurrency(**declared)  # type: ignore[arg-type]


def test_meta_takes_a_concurrency_only() -> None:
    with pytest.raises(TypeError, match="Concurrency"):
        Meta(concurrency=3)  # type: ignore[arg-type]


async def test_the_workers_never_run_two_of_a_customer(store: spi.FlowStore, clock: ManualClock) -> None:
    """Four worker slots, twelve orders over three customers: at no moment do two of a customer run, and
    never more than three in all; every one completes."""
    running: Counter[int] = Counter()
    seen_most: Counter[int] = Counter()
    total = [0, 0]

    async def ship(ctx: object) -> None:
        customer = ctx.order.customer_id  # type: ignore[attr-defined]
        running[customer] += 1
        total[0] += 1
        seen_most[customer] = max(seen_most[customer], running[customer])
        total[1] = max(total[1], total[0])
        await asyncio.sleep(0)  # let the other slots claim and run meanwhile
        await asyncio.sleep(0)
        running[customer] -= 1
        total[0] -= 1

    async with make_engine(store, clock, [per_customer(ship)], workers=4, batch_size=4) as engine:
        ids = [
            await engine.workflows.start(
                "fulfil", inputs={"order": Order(id=f"o{n}", customer_id=n % 3)}, run_here=True
            )
            for n in range(12)
        ]
        for eid in ids:
            await until(store, eid)
    assert max(seen_most.values()) == 1, seen_most
    assert total[1] <= 3


async def test_the_docs_example_queues_a_customers_second_order(clock: ManualClock) -> None:
    """docs/concurrency.md's fulfilment, one order at a time per customer: started with no worker running,
    a customer's second order is second in that customer's line."""
    from examples.fulfilment.per_customer import fulfilment_per_customer
    from examples.fulfilment.services import Item, Order
    from flowdeck.store.memory import MemoryStore

    store = MemoryStore(clock)
    engine = make_engine(store, clock, [fulfilment_per_customer])
    await engine.register("fulfilment-per-customer", fulfilment_per_customer)
    for eid, customer in (("first", "ada"), ("second", "ada"), ("other", "bo")):
        order = Order(id=eid, customer=customer, items=[Item(sku="mug", qty=1, price=900)])
        await engine.workflows.start("fulfilment-per-customer", execution_id=eid, inputs={"order": order})
        await clock.advance(1)
    queued = await store.queue_of("second")
    assert queued == concurrency.Queued(concurrency.Group("fulfilment-per-customer", "ada"), 2, 1, 0)
    assert (await store.get_execution("other")).concurrency == concurrency.Limits(50, "bo", 1)
