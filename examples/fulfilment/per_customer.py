"""The fulfilment flow, one order at a time per customer and fifty in flight at most (docs/concurrency.md):
two orders of one customer would reserve the same stock and charge the same card at once. Served like any
flows module (`FLOWDECK_FLOW_MODULES = ["examples.fulfilment.per_customer"]`)."""

from __future__ import annotations

import dataclasses

from examples.fulfilment.flows import fulfilment
from flowdeck.engine import Concurrency, Meta

__all__ = ["FLOWS", "fulfilment_per_customer"]

fulfilment_per_customer = dataclasses.replace(
    fulfilment,
    name="fulfilment-per-customer",
    meta=Meta(
        description="fulfilment, one order at a time per customer, fifty in flight at most",
        concurrency=Concurrency(limit=50, key="order.customer", per_key=1),
    ),
)

FLOWS = {"fulfilment-per-customer": fulfilment_per_customer}
