"""Every example flow of the seed README (examples/seed.py), run through an engine on each store, with
what it recorded and what it asked of the world checked whole."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from examples import seed
from examples.seed import Approval, Item
from flowdeck.engine import FlowRetry, interpreter
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import POLL, advance, make_engine, until

ORDER = seed.sample_order()
TWO = seed.sample_order("o-2", Item(sku="widget", qty=3, price=400), Item(sku="gadget", qty=1, price=20000))

Drive = Callable[[FlowEngine, str, spi.FlowStore, ManualClock], Awaitable[None]]


@dataclass(frozen=True)
class Example:
    flow: Flow
    inputs: dict[str, Any]
    record: dict[str, Any]
    ledger: list[tuple[str, ...]]
    drive: Drive | None = None
    status: spi.Status = field(default_factory=spi.Completed)
    before: Callable[[], None] = field(default=lambda: None)


def waits_on(path: str) -> Callable[[spi.ExecutionState], bool]:
    return lambda state: state.executor is None and path in state.waits


def signal(name: str, value: Any) -> Drive:
    async def drive(engine: FlowEngine, eid: str, store: spi.FlowStore, clock: ManualClock) -> None:
        await until(store, eid, waits_on(name))
        await engine.executions.signal(eid, name, value)

    return drive


def wait_out(path: str, duration: timedelta) -> Drive:
    async def drive(engine: FlowEngine, eid: str, store: spi.FlowStore, clock: ManualClock) -> None:
        await until(store, eid, waits_on(path))
        await advance(clock, duration)

    return drive


def retried_once(engine: FlowEngine, eid: str, store: spi.FlowStore, clock: ManualClock) -> Awaitable[None]:
    async def drive() -> None:
        await until(store, eid, waits_on("charge#retry1"))
        # The retry is due after 1 s; an idle poll notices a due row at its own deadline. Time moves a
        # second at a time and stops once the retry is claimed: moving on while the retried body's thread
        # has not answered yet would bring its 10 s timeout due too.
        for _ in range(int(POLL.total_seconds()) + 1):
            state = await store.get_execution(eid)
            if state is None or state.executor is not None or "charge#retry1" not in state.waits:
                return
            await advance(clock, timedelta(seconds=1))

    return drive()


CHARGED = ("charge", "o-1017", "1200")

EXAMPLES: dict[str, Example] = {
    "fulfilment": Example(
        seed.fulfilment,
        {"order": ORDER},
        {"order": ORDER, "total": 1200, "charge": "ch-o-1017-1200"},
        [CHARGED, ("ship", "o-1017")],
    ),
    "awaiting_order": Example(
        seed.awaiting_order,
        {},
        {"order": ORDER, "total": 1200},
        [],
        drive=signal("order", ORDER.model_dump()),
    ),
    "order_shorthand": Example(seed.order_shorthand, {"order": ORDER}, {"order": ORDER}, []),
    "priced": Example(
        seed.priced,
        {"order": ORDER},
        {"order": ORDER, "lines": 1, "total": 1200, "summary": "1 line(s), 1200 cents"},
        [],
    ),
    "shipping": Example(
        seed.shipping,
        {"order": ORDER},
        {"order": ORDER, "total": 1200},
        [("ship", "o-1017"), ("notify", "o-1017", "shipped, 1200 cents")],
    ),
    "cooling": Example(
        seed.cooling,
        {"order": ORDER},
        {"order": ORDER},
        [("ship", "o-1017"), ("notify", "o-1017", "how did we do?")],
        drive=wait_out("delivery-window", timedelta(hours=48)),
    ),
    "charging": Example(
        seed.charging,
        {"order": ORDER},
        {"order": ORDER, "total": 1200, "charge": "ch-o-1017-1200"},
        [CHARGED],
        drive=retried_once,
        before=lambda: seed.fail_next("charge", FlowRetry("gateway busy")),
    ),
    "payment": Example(
        seed.payment,
        {"order_id": "o-9", "amount_cents": 250},
        {"order_id": "o-9", "amount_cents": 250, "charge_id": "ch-o-9-250"},
        [("charge", "o-9", "250")],
    ),
    "with_payment": Example(
        seed.with_payment,
        {"order": ORDER},
        {
            "order": ORDER,
            "total": 1200,
            "payment": {"order_id": "o-1017", "amount_cents": 1200, "charge_id": "ch-o-1017-1200"},
        },
        [CHARGED, ("ship", "o-1017")],
    ),
    "routed": Example(
        seed.routed,
        {"order": TWO},
        {"order": TWO, "total": 21200, "route": "supervisor"},
        [("notify", "o-2", "supervisor")],
    ),
    "until_accepted": Example(
        seed.until_accepted,
        {"order": ORDER},
        {"order": ORDER, "accepted": True},
        [("carrier", "o-1017")] * 3,
        before=lambda: seed.script_carrier("o-1017", "pending", "pending", "accepted"),
    ),
    "counted": Example(seed.counted, {"order": TWO}, {"order": TWO, "attempts": 2}, []),
    "watching": Example(
        seed.watching,
        {"order": ORDER},
        {"order": ORDER, "delivery": "delivered"},
        [("carrier", "o-1017")] * 2,
        drive=wait_out("delivery##0", timedelta(minutes=30)),
        before=lambda: seed.script_carrier("o-1017", "in-transit", "delivered"),
    ),
    "reserving": Example(
        seed.reserving,
        {"order": TWO},
        {"order": TWO, "reservations": ["res-widget", "res-gadget"]},
        [("reserve", "widget", "3"), ("reserve", "gadget", "1"), ("ship", "o-2")],
    ),
    "bounded": Example(
        seed.bounded,
        {"order": TWO},
        {"order": TWO, "reservations": ["res-widget", "res-gadget"]},
        [("reserve", "widget", "3"), ("reserve", "gadget", "1")],
    ),
    "saga": Example(
        seed.saga,
        {"order": ORDER},
        {"order": ORDER, "total": 1200, "reservations": ["res-widget"], "charge": "ch-o-1017-1200"},
        [("reserve", "widget", "3"), CHARGED, ("refund", "ch-o-1017-1200"), ("release", "res-widget")],
        status=spi.Failed("The carrier refused the shipment.", "ShipmentRefused"),
        before=lambda: seed.fail_next("ship", seed.ShipmentRefused()),
    ),
    "stock_check": Example(seed.stock_check, {"order": ORDER}, {"order": ORDER, "lines": 1}, []),
    "price_check": Example(seed.price_check, {"order": ORDER}, {"order": ORDER, "total": 1200}, []),
    "checks": Example(seed.checks, {"order": ORDER}, {"order": ORDER, "lines": 1, "total": 1200}, []),
    "invoicing": Example(
        seed.invoicing, {"order": ORDER}, {"order": ORDER, "invoice": "invoice for o-1017"}, []
    ),
    "everything": Example(
        seed.everything,
        {"order": ORDER},
        {"order": ORDER, "lines": 1, "total": 1200, "invoice": "invoice for o-1017"},
        [],
    ),
    "await_approval": Example(
        seed.await_approval,
        {},
        {"approval": Approval(approved=True, by="bob"), "decision": "approved"},
        [],
        drive=signal("approval", {"approved": True, "by": "bob"}),
    ),
    "approval_deadline": Example(
        seed.approval_deadline,
        {},
        {"decision": "timed-out"},
        [],
        drive=wait_out("grace", timedelta(hours=24)),
    ),
    "decided_by_approval": Example(
        seed.decided,
        {},
        {"approval": Approval(approved=False), "decision": "declined"},
        [],
        drive=signal("approval", {"approved": False}),
    ),
    "decided_by_deadline": Example(
        seed.decided, {}, {"decision": "timed-out"}, [], drive=wait_out("grace", timedelta(hours=24))
    ),
    "end_to_end": Example(
        seed.end_to_end,
        {"order": ORDER},
        {"order": ORDER, "total": 1200},
        [("ship", "o-1017"), ("notify", "o-1017", "shipped, 1200 cents")],
    ),
}


def test_every_seed_flow_has_an_example() -> None:
    covered = {example.flow for example in EXAMPLES.values()}
    assert [name for name, flow in seed.ALL_FLOWS.items() if flow not in covered] == []


@pytest.mark.parametrize("name", list(EXAMPLES))
async def test_seed_example(name: str, store: spi.FlowStore, clock: ManualClock) -> None:
    example = EXAMPLES[name]
    example.before()
    async with make_engine(store, clock) as engine:
        await engine.register(name, example.flow)
        eid = await engine.workflows.start(name, inputs=example.inputs)
        if example.drive:
            await example.drive(engine, eid, store, clock)
        state = await until(store, eid)
    assert state.status == example.status
    record = interpreter.assemble_record(example.flow, await store.get_all_fields(eid))
    assert record._asdict() == example.record
    asked_of_the_world = list(seed.LEDGER)
    assert side_by_side(asked_of_the_world) == side_by_side(example.ledger)


def side_by_side(ledger: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The ledger with each run of one verb in a stable order: a foreach's items run side by side, so their
    calls (`reserve`, `reserve`) land in any order among themselves, and what follows them comes after."""
    runs: list[list[tuple[str, ...]]] = []
    for entry in ledger:
        if runs and runs[-1][0][0] == entry[0]:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    return [entry for run in runs for entry in sorted(run)]
