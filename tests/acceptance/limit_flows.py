"""The concurrency limits' SIGKILL loop (tests/acceptance/test_limits_sigkill.py): one running per customer,
each body long enough that two of a customer would overlap if the limit let them."""

from __future__ import annotations

import time

from flowdeck import Concurrency, Flow, Meta


def serve(ctx: object) -> None:
    time.sleep(0.15)


per_customer = (
    Flow.init("per-customer", meta=Meta(concurrency=Concurrency(key="customer", per_key=1)))
    .input("customer", str)
    .step("serve", serve)
)

FLOWS = {"per-customer": per_customer}
