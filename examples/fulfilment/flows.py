"""The order-fulfilment flows (the seed README's, on a database ledger), served by discovery via FLOWS.

`fulfilment`: the order arrives, its total is computed, every line is reserved (a compensated foreach),
a large order waits for a person's approval raced against a 24-hour grace period, the payment subflow
charges the card (refunded if a later node fails), the order ships and the customer hears of it.

The approval is a race of three arms that all produce `decision`: `auto` answers at once for an order
under `LARGE_ORDER_CENTS` and refuses otherwise (a refused arm does not win a race), `manual` waits for the
`approval` input, and `grace` sleeps 24 hours. A small order therefore never waits; a large one waits for
whichever comes first, a person or the deadline.
"""

from __future__ import annotations

from datetime import timedelta

from examples.fulfilment import services
from examples.fulfilment.services import Approval, Order
from flowdeck.engine import Flow, FlowDomainError, Meta, Schedule

__all__ = [
    "FLOWS",
    "LARGE_ORDER_CENTS",
    "NeedsApproval",
    "NotApproved",
    "approval",
    "follow_up",
    "fulfilment",
    "fulfilment_named",
    "fulfilment_v1",
    "order_total",
    "payment",
]

LARGE_ORDER_CENTS = 100_000
"""An order totalling more than this (in cents) waits for a person's approval."""

GRACE = timedelta(hours=24)


class NeedsApproval(FlowDomainError):
    """The order is too large to approve automatically."""


class NotApproved(FlowDomainError):
    """Nobody approved the order (declined, or the grace period ran out)."""


def order_total(ctx: object) -> int:
    return sum(item.qty * item.price for item in ctx.order.items)  # type: ignore[attr-defined]


def auto_decision(ctx: object) -> str:
    total: int = ctx.total  # type: ignore[attr-defined]
    if total > LARGE_ORDER_CENTS:
        raise NeedsApproval(f"total {total} cents is over {LARGE_ORDER_CENTS}: a person decides")
    return "auto-approved"


def check_decision(ctx: object) -> None:
    decision: str = ctx.decision  # type: ignore[attr-defined]
    if decision not in ("auto-approved", "approved"):
        raise NotApproved(f"the order was not approved ({decision})")


approval = Flow.race(
    Flow.init("approval").output("decision", auto_decision, type=str),
    Flow.race(
        Flow.init("approval")
        .input("approval", Approval, description="a person approves or declines a large order")
        .output("decision", lambda ctx: "approved" if ctx.approval.approved else "declined", type=str),
        Flow.init("approval")
        .sleep("grace", GRACE, description="how long a large order waits for a person")
        .output("decision", lambda ctx: "timed-out", type=str),
    ),
)

payment = (
    Flow.init("payment", meta=Meta(description="charge an order's card, refunded if the order fails"))
    .input("order_id", str)
    .input("amount_cents", int)
    .input("card", str)
    .output(
        "charge_id",
        lambda ctx: services.charge_card(ctx.key, ctx.execution_id, ctx.order_id, ctx.amount_cents, ctx.card),
        type=str,
        compensate=lambda ctx: services.refund_charge(ctx.charge_id),
        description="authorise and capture the card",
        timeout=timedelta(seconds=30),
        retry=Schedule.exponential(timedelta(seconds=1), 2.0, timedelta(minutes=1)).take(5),
    )
)


def _start(name: str, carrier_limit: str | None = None) -> Flow:
    return (
        Flow.init(name, meta=Meta(description="take an order from reservation to the customer's door"))
        .input("order", Order, description="the order, as the shop sends it")
        .output("total", order_total, type=int)
        .foreach(
            "reservations",
            lambda ctx: ctx.order.items,
            lambda item, ctx: services.reserve_stock(ctx.key, ctx.execution_id, item),
            type=str,
            compensate=lambda item, reservation_id: services.release_stock(reservation_id),
        )
        .and_then(approval)
        .step("approved", check_decision)
        .subflow(
            "payment",
            payment,
            lambda ctx: {"order_id": ctx.order.id, "amount_cents": ctx.total, "card": ctx.order.card},
        )
        .output(
            "ship",
            lambda ctx: services.ship(ctx.key, ctx.execution_id, ctx.order),
            type=str,
            rate_limit=carrier_limit,  # one call to the carrier's API: examples/fulfilment/carrier.py
        )
    )


fulfilment_v1 = _start("fulfilment")
"""The version before customers were told: kept for the demo's parked execution and `flowdeck resume`."""


def fulfilment_named(name: str, carrier_limit: str | None = None) -> Flow:
    """The fulfilment flow under another name; `carrier_limit`: the rate limit booking a parcel uses."""
    return _start(name, carrier_limit).step(
        "notify",
        lambda ctx: services.notify_customer(
            ctx.key, ctx.execution_id, ctx.order.id, f"shipped with {ctx.ship}, {ctx.total} cents"
        ),
    )


fulfilment = fulfilment_named("fulfilment")

follow_up = (
    Flow.init("follow_up", meta=Meta(description="ask for a review once the delivery window has passed"))
    .input("order", Order)
    .sleep("delivery-window", timedelta(hours=48))
    .step(
        "ask-for-review",
        lambda ctx: services.notify_customer(ctx.key, ctx.execution_id, ctx.order.id, "how did we do?"),
    )
)

FLOWS: dict[str, Flow] = {"fulfilment": fulfilment, "payment": payment, "follow_up": follow_up}
