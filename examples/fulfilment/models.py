"""The world the fulfilment flows act on: a ledger of what each service was asked to do.

Every row is keyed by the idempotency key the engine hands a body (`ctx.key`: execution id + durable
path) or by the id of the thing it undoes, under a unique constraint: a node re-run after a crash finds
its row and writes nothing new, it only counts the call (`calls`), so a test can tell a re-run that was
absorbed from a duplicate that was not.
"""

from __future__ import annotations

from django.db import models

__all__ = ["Charge", "Notification", "Posting", "Refund", "Release", "Reservation", "Shipment"]


class Entry(models.Model):
    """One side effect: unique by `key`, with the execution it was done for and how often it was asked."""

    key = models.CharField(max_length=500, unique=True)
    execution_id = models.CharField(max_length=255, db_index=True)
    calls = models.PositiveIntegerField(default=1)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["id"]


class Charge(Entry):
    order_id = models.CharField(max_length=255)
    amount_cents = models.BigIntegerField()
    charge_id = models.CharField(max_length=255, unique=True)


class Refund(Entry):
    """Keyed by the charge it refunds: a charge is refunded at most once."""

    charge_id = models.CharField(max_length=255)


class Reservation(Entry):
    sku = models.CharField(max_length=255)
    qty = models.IntegerField()
    reservation_id = models.CharField(max_length=255, unique=True)


class Release(Entry):
    """Keyed by the reservation it releases."""

    reservation_id = models.CharField(max_length=255)


class Shipment(Entry):
    order_id = models.CharField(max_length=255)
    carrier = models.CharField(max_length=100)


class Notification(Entry):
    order_id = models.CharField(max_length=255)
    message = models.TextField()


class Posting(models.Model):
    """A row written by an `atomic=True` step (or, to compare, an ordinary one): no idempotency key and no
    unique constraint, so a body whose effect landed twice leaves two rows for one (execution, node)."""

    execution_id = models.CharField(max_length=255, db_index=True)
    node = models.CharField(max_length=255)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
