"""A workflow with concurrency limits for the console's tests: one per customer, two in all."""

from __future__ import annotations

from flowdeck.engine import Concurrency, Flow, Meta

__all__ = ["FLOWS", "per_customer"]

per_customer = (
    Flow.init("per_customer", meta=Meta(concurrency=Concurrency(limit=2, key="customer", per_key=1)))
    .input("customer", str)
    .step("serve", lambda ctx: None)
)

FLOWS = {"per_customer": per_customer}
