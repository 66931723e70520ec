"""The side effects of the fulfilment flows, each an idempotent write to the ledger (see models.py).

A service takes the idempotency key the engine gives the body (`ctx.key`) and writes its row under it;
asked again with the same key (a node re-run after a crash), it finds the row, counts the call and
answers what it answered the first time. Undos are keyed by what they undo, so a refund or a release
happens once however often the unwind is replayed.

A few orders misbehave on purpose, for the demo and the tests: a card named "declined" is refused (an
answer: the order fails and its reservations are released), an item whose SKU starts with
"out-of-stock" is refused likewise, and a country with no carrier is a bug in the shipping table (a
mistake: the execution stops for a person, F0001). An order to Antarctica ("AQ") is refused by every
carrier after it was charged: the charge is refunded and the stock released.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db import IntegrityError, models, router, transaction
from django.db.models import F
from pydantic import BaseModel

from examples.fulfilment import models as ledger
from flowdeck.engine import FlowDomainError

__all__ = [
    "CARRIERS",
    "Approval",
    "CardDeclined",
    "Item",
    "Order",
    "OutOfStock",
    "ShipmentRefused",
    "charge_card",
    "notify_customer",
    "refund_charge",
    "release_stock",
    "reserve_stock",
    "ship",
]

M = TypeVar("M", bound=models.Model)


# ------------------------------------------------------------------------------------------ values


class Item(BaseModel):
    sku: str
    qty: int
    price: int  # cents, per unit


class Order(BaseModel):
    id: str
    customer: str
    items: list[Item]
    card: str = "visa"
    country: str = "NL"


class Approval(BaseModel):
    approved: bool
    by: str = ""


class CardDeclined(FlowDomainError):
    """The card was declined."""


class OutOfStock(FlowDomainError):
    """An item is out of stock."""


class ShipmentRefused(FlowDomainError):
    """The carrier refused the shipment."""


# The shipping table. A country missing here is a bug (KeyError): the execution stops (F0001) until
# someone adds the carrier, answers for the shipment by hand, or ends the order.
# Countries no carrier ships to: an answer (the order fails, its charge is refunded, its stock released).
EMBARGOED = frozenset({"AQ"})

CARRIERS: dict[str, str] = {"NL": "PostNL", "BE": "bpost", "DE": "DHL", "FR": "Colissimo", "GB": "Royal Mail"}


# ----------------------------------------------------------------------------------------- ledger


def _once(model: type[M], key: str, execution_id: str, **values: Any) -> M:
    """The row for `key`, written the first time; a repeated call only counts itself."""
    try:
        # on the database the row is written to (a router may put the ledger beside the executions)
        with transaction.atomic(using=router.db_for_write(model)):
            return model.objects.create(key=key, execution_id=execution_id, **values)
    except IntegrityError:
        model.objects.filter(key=key).update(calls=F("calls") + 1)
        return model.objects.get(key=key)


# --------------------------------------------------------------------------------------- services


def reserve_stock(key: str, execution_id: str, item: Item) -> str:
    """Hold `item.qty` of `item.sku`; answers the reservation id."""
    if item.sku.startswith("out-of-stock"):
        raise OutOfStock(f"{item.sku} is out of stock")
    row = _once(
        ledger.Reservation, key, execution_id, sku=item.sku, qty=item.qty, reservation_id=f"res-{key}"
    )
    return row.reservation_id


def release_stock(reservation_id: str) -> None:
    """Give a reservation back (the compensation of `reserve_stock`)."""
    held = ledger.Reservation.objects.get(reservation_id=reservation_id)
    _once(ledger.Release, f"release:{reservation_id}", held.execution_id, reservation_id=reservation_id)


def charge_card(key: str, execution_id: str, order_id: str, amount_cents: int, card: str) -> str:
    """Charge `amount_cents` to the order's card; answers the charge id."""
    if card == "declined":
        raise CardDeclined(f"card declined for order {order_id} ({amount_cents} cents)")
    row = _once(
        ledger.Charge,
        key,
        execution_id,
        order_id=order_id,
        amount_cents=amount_cents,
        charge_id=f"ch-{key}",
    )
    return row.charge_id


def refund_charge(charge_id: str) -> None:
    """Refund a charge in full (the compensation of `charge_card`)."""
    charged = ledger.Charge.objects.get(charge_id=charge_id)
    _once(ledger.Refund, f"refund:{charge_id}", charged.execution_id, charge_id=charge_id)


def ship(key: str, execution_id: str, order: Order) -> str:
    """Hand the order to the carrier of its country; answers the carrier."""
    if order.country in EMBARGOED:
        raise ShipmentRefused(f"no carrier ships order {order.id} to {order.country}")
    carrier = CARRIERS[order.country]
    _once(ledger.Shipment, key, execution_id, order_id=order.id, carrier=carrier)
    return carrier


def notify_customer(key: str, execution_id: str, order_id: str, message: str) -> None:
    _once(ledger.Notification, key, execution_id, order_id=order_id, message=message)
