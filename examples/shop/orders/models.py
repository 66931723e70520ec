"""The shop's orders: the row a view writes in the same transaction as the start of its fulfilment."""

from __future__ import annotations

from django.db import models

__all__ = ["Order"]


class Order(models.Model):
    """One order. Its fulfilment (`orders.flows.fulfil_order`) moves `status` on and records the shipment."""

    PLACED, RESERVED, SHIPPED = "placed", "reserved", "shipped"

    customer = models.CharField(max_length=200)
    item = models.CharField(max_length=200)
    quantity = models.PositiveIntegerField()
    status = models.CharField(max_length=20, default=PLACED)
    tracking = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    @property
    def execution_id(self) -> str:
        """The id of this order's fulfilment: one per order, so placing it twice cannot start two."""
        return f"order-{self.pk}"
