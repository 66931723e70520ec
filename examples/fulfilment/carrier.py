"""The fulfilment flow with the carrier's API rate-limited (docs/rate-limits.md): booking a parcel (`ship`) is
one call to the carrier, whose contract allows 50 calls a minute per account, however many of our workers
make them. Served like any flows module (`FLOWDECK_FLOW_MODULES = ["examples.fulfilment.carrier"]`): every
process that serves it reads its `RATE_LIMITS`."""

from __future__ import annotations

from examples.fulfilment.flows import fulfilment_named
from flowdeck.engine import RateLimit

__all__ = ["FLOWS", "RATE_LIMITS", "fulfilment_by_carrier_api"]

RATE_LIMITS = {"carrier-api": RateLimit(50, per="minute")}

fulfilment_by_carrier_api = fulfilment_named("fulfilment-carrier-api", carrier_limit="carrier-api")

FLOWS = {"fulfilment-carrier-api": fulfilment_by_carrier_api}
