"""The fulfilment flow for express orders, claimed before the standard ones (docs/priorities.md): a customer
who paid for next-day delivery should not wait behind the morning's backlog. Served like any flows module
(`FLOWDECK_FLOW_MODULES = ["examples.fulfilment.express"]`)."""

from __future__ import annotations

import dataclasses

from examples.fulfilment.flows import fulfilment
from flowdeck.engine import Meta

__all__ = ["FLOWS", "fulfilment_express"]

fulfilment_express = dataclasses.replace(
    fulfilment,
    name="fulfilment-express",
    meta=Meta(description="fulfilment of an express order, claimed before the standard ones", priority=50),
)

FLOWS = {"fulfilment-express": fulfilment_express}
