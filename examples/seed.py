"""The kyo-flow README's order-fulfilment flows, in Python, for the docs, the demo and everyone's tests.

The services are plain functions that write to an in-memory `LEDGER`, so a test can see what the world was
asked to do (and how often): call `reset()` first. `fail_next(service, error)` makes a service's next call
raise, and `script_carrier(order_id, *statuses)` decides what the carrier answers.
"""

from __future__ import annotations

from collections import defaultdict, deque
from datetime import timedelta

from pydantic import BaseModel

from flowdeck.engine import Flow, FlowDomainError, Loop, Schedule

__all__ = [
    "ALL_FLOWS",
    "LEDGER",
    "Approval",
    "CardDeclined",
    "Item",
    "Order",
    "ShipmentRefused",
    "approval_deadline",
    "await_approval",
    "awaiting_order",
    "bounded",
    "carrier_status",
    "charge_card",
    "charging",
    "checks",
    "cooling",
    "counted",
    "decided",
    "end_to_end",
    "everything",
    "fail_next",
    "fulfilment",
    "invoicing",
    "notify_customer",
    "order_shorthand",
    "payment",
    "price_check",
    "priced",
    "refund_charge",
    "release_stock",
    "reserve_stock",
    "reserving",
    "reset",
    "routed",
    "saga",
    "sample_order",
    "script_carrier",
    "ship",
    "shipping",
    "stock_check",
    "until_accepted",
    "watching",
    "with_payment",
]


# ------------------------------------------------------------------------------------------ models


class Item(BaseModel):
    sku: str
    qty: int
    price: int  # cents


class Order(BaseModel):
    id: str
    customer: str
    items: list[Item]


class Approval(BaseModel):
    approved: bool
    by: str = ""


def sample_order(order_id: str = "o-1017", *items: Item) -> Order:
    """The README's order: ada buys three widgets at 400 cents."""
    return Order(id=order_id, customer="ada", items=list(items) or [Item(sku="widget", qty=3, price=400)])


class CardDeclined(FlowDomainError):
    """The card was declined."""


class ShipmentRefused(FlowDomainError):
    """The carrier refused the shipment."""


# ---------------------------------------------------------------------------------------- services

LEDGER: list[tuple[str, ...]] = []
"""Every service call, in order: ("charge", order_id, amount), ("refund", charge_id), ..."""

_FAILURES: dict[str, deque[BaseException]] = defaultdict(deque)
_CARRIER: dict[str, deque[str]] = defaultdict(deque)
_CARRIER_LAST: dict[str, str] = {}


def reset() -> None:
    """Forget every call, queued failure and carrier script."""
    LEDGER.clear()
    _FAILURES.clear()
    _CARRIER.clear()
    _CARRIER_LAST.clear()


def fail_next(service: str, error: BaseException) -> None:
    """Make the next call of `service` ("charge", "refund", "reserve", "release", "ship", "notify",
    "carrier") raise `error` instead of acting. Queue several to fail several calls."""
    _FAILURES[service].append(error)


def script_carrier(order_id: str, *statuses: str) -> None:
    """What the carrier answers for `order_id`, call after call; the last answer then repeats.
    Unscripted, it answers "accepted"."""
    _CARRIER[order_id].extend(statuses)


def _call(service: str, *args: str | int) -> None:
    failures = _FAILURES.get(service)
    if failures:
        raise failures.popleft()
    LEDGER.append((service, *(str(a) for a in args)))


def charge_card(order_id: str, amount_cents: int) -> str:
    _call("charge", order_id, amount_cents)
    return f"ch-{order_id}-{amount_cents}"


def refund_charge(charge_id: str) -> None:
    _call("refund", charge_id)


def reserve_stock(item: Item) -> str:
    _call("reserve", item.sku, item.qty)
    return f"res-{item.sku}"


def release_stock(reservation_id: str) -> None:
    _call("release", reservation_id)


def ship(order: Order) -> None:
    _call("ship", order.id)


def notify_customer(order_id: str, message: str) -> None:
    _call("notify", order_id, message)


def carrier_status(order_id: str) -> str:
    _call("carrier", order_id)
    queue = _CARRIER.get(order_id)
    if queue:
        _CARRIER_LAST[order_id] = queue.popleft()
    return _CARRIER_LAST.get(order_id, "accepted")


# ------------------------------------------------------------------------------------------- flows

fulfilment = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .output(
        "charge",
        lambda ctx: charge_card(ctx.order.id, ctx.total),
        compensate=lambda ctx: refund_charge(ctx.charge),
    )
    .step("ship", lambda ctx: ship(ctx.order))
)

awaiting_order = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
)

order_shorthand = Flow.input("order", Order)

priced = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("lines", lambda ctx: len(ctx.order.items), type=int)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .output("summary", lambda ctx: f"{ctx.lines} line(s), {ctx.total} cents", type=str)
)

shipping = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .step("ship", lambda ctx: ship(ctx.order))
    .step("notify", lambda ctx: notify_customer(ctx.order.id, f"shipped, {ctx.total} cents"))
)

cooling = (
    Flow.init("fulfilment")
    .input("order", Order)
    .step("ship", lambda ctx: ship(ctx.order))
    .sleep("delivery-window", timedelta(hours=48))
    .step("ask-for-review", lambda ctx: notify_customer(ctx.order.id, "how did we do?"))
)

charging = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .output(
        "charge",
        lambda ctx: charge_card(ctx.order.id, ctx.total),
        description="authorise the card",
        timeout=timedelta(seconds=10),
        retry=Schedule.exponential(timedelta(seconds=1), 2.0, timedelta(minutes=1)),
    )
)

payment = (
    Flow.init("payment")
    .input("order_id", str)
    .input("amount_cents", int)
    .output("charge_id", lambda ctx: charge_card(ctx.order_id, ctx.amount_cents), type=str)
)

with_payment = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .subflow("payment", payment, lambda ctx: {"order_id": ctx.order.id, "amount_cents": ctx.total})
    .step("ship", lambda ctx: ship(ctx.order))
)

routed = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .dispatch("route", type=str)
    .when(lambda ctx: ctx.total > 100000, lambda ctx: "review", name="manual-review")
    .when(lambda ctx: ctx.total > 10000, lambda ctx: "supervisor", name="supervisor")
    .otherwise(lambda ctx: "auto-approve", name="auto")
    .step("record", lambda ctx: notify_customer(ctx.order.id, ctx.route))
)

until_accepted = (
    Flow.init("fulfilment")
    .input("order", Order)
    .loop(
        "accepted",
        lambda ctx: Loop.done(True) if carrier_status(ctx.order.id) == "accepted" else Loop.again(),
        type=bool,
    )
)

counted = (
    Flow.init("fulfilment")
    .input("order", Order)
    .loop(
        "attempts",
        lambda tries, ctx: Loop.done(tries) if tries >= len(ctx.order.items) else Loop.again(tries + 1),
        initial=0,
        type=int,
    )
)

watching = (
    Flow.init("fulfilment")
    .input("order", Order)
    .loop_on(
        "delivery",
        Schedule.fixed(timedelta(minutes=30)),
        lambda ctx: Loop.done("delivered") if carrier_status(ctx.order.id) == "delivered" else Loop.again(),
        type=str,
    )
)

reserving = (
    Flow.init("fulfilment")
    .input("order", Order)
    .foreach("reservations", lambda ctx: ctx.order.items, reserve_stock)
    .step("ship", lambda ctx: ship(ctx.order))
)

bounded = (
    Flow.init("fulfilment")
    .input("order", Order)
    .foreach(
        "reservations",
        lambda ctx: ctx.order.items,
        reserve_stock,
        timeout=timedelta(seconds=5),
        retry=Schedule.fixed(timedelta(seconds=1)).take(3),
        concurrency=4,
    )
)

saga = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
    .foreach(
        "reservations",
        lambda ctx: ctx.order.items,
        reserve_stock,
        compensate=lambda item, reservation_id: release_stock(reservation_id),
    )
    .output(
        "charge",
        lambda ctx: charge_card(ctx.order.id, ctx.total),
        compensate=lambda ctx: refund_charge(ctx.charge),
    )
    .step("ship", lambda ctx: ship(ctx.order))
)

stock_check = (
    Flow.init("fulfilment").input("order", Order).output("lines", lambda ctx: len(ctx.order.items), type=int)
)

price_check = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("total", lambda ctx: sum(i.qty * i.price for i in ctx.order.items), type=int)
)

checks = stock_check.zip(price_check)

invoicing = (
    Flow.init("fulfilment")
    .input("order", Order)
    .output("invoice", lambda ctx: f"invoice for {ctx.order.id}", type=str)
)

everything = Flow.gather(stock_check, price_check, invoicing)

await_approval = (
    Flow.init("approval")
    .input("approval", Approval)
    .output("decision", lambda ctx: "approved" if ctx.approval.approved else "declined", type=str)
)

approval_deadline = (
    Flow.init("approval")
    .sleep("grace", timedelta(hours=24))
    .output("decision", lambda ctx: "timed-out", type=str)
)

decided = Flow.race(await_approval, approval_deadline)

end_to_end = awaiting_order.and_then(
    Flow.init("shipping")
    .step("ship", lambda ctx: ship(ctx.order))
    .step("notify", lambda ctx: notify_customer(ctx.order.id, f"shipped, {ctx.total} cents"))
)

ALL_FLOWS: dict[str, Flow] = {
    "fulfilment": fulfilment,
    "awaiting_order": awaiting_order,
    "order_shorthand": order_shorthand,
    "priced": priced,
    "shipping": shipping,
    "cooling": cooling,
    "charging": charging,
    "payment": payment,
    "with_payment": with_payment,
    "routed": routed,
    "until_accepted": until_accepted,
    "counted": counted,
    "watching": watching,
    "reserving": reserving,
    "bounded": bounded,
    "saga": saga,
    "stock_check": stock_check,
    "price_check": price_check,
    "checks": checks,
    "invoicing": invoicing,
    "everything": everything,
    "await_approval": await_approval,
    "approval_deadline": approval_deadline,
    "decided": decided,
    "end_to_end": end_to_end,
}
"""Every example by its module name (several flows share the Flow.init name "fulfilment": register them
under these keys, or under ids of your own)."""
