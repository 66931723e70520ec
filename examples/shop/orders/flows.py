"""The shop's flow, found by Flowdeck's discovery (every installed app's `flows.py` declaring `FLOWS`).

`fulfil_order` reserves the stock, ships the order and records its tracking number, each a step whose body
uses the ORM on the shop's own `Order` row. `reserve` is an ordinary step: idempotent by construction (it
sets a state rather than adding to one), so a re-run after a crash writes the same thing again. `ship` is
atomic: its update commits in the same transaction as its record, exactly once.
"""

from __future__ import annotations

from flowdeck.engine import Flow, Meta
from orders.models import Order

__all__ = ["FLOWS", "fulfil_order"]


def reserve(ctx: object) -> None:
    Order.objects.filter(pk=ctx.order_id).update(status=Order.RESERVED)  # type: ignore[attr-defined]


def ship(ctx: object) -> str:
    tracking = f"TRK-{ctx.order_id:06d}"  # type: ignore[attr-defined]
    Order.objects.filter(pk=ctx.order_id).update(status=Order.SHIPPED, tracking=tracking)  # type: ignore[attr-defined]
    return tracking


fulfil_order = (
    Flow.init("fulfil_order", meta=Meta(description="reserve an order's stock and ship it"))
    .input("order_id", int, description="the shop's Order row")
    .step("reserve", reserve, description="set the order aside in the warehouse")
    .output("tracking", ship, type=str, atomic=True, description="hand it to the carrier")
)

FLOWS: dict[str, Flow] = {"fulfil_order": fulfil_order}
