"""The rate limits' SIGKILL loop (tests/acceptance/test_rate_sigkill.py): every execution calls the carrier
once under a limit of five calls a second shared by every worker, each call long enough for kills to land
in it, then records its label."""

from __future__ import annotations

import time

from flowdeck import Flow, RateLimit

RATE_LIMITS = {"carrier": RateLimit(5, per="second")}


def call_carrier(ctx: object) -> str:
    time.sleep(0.3)  # a slow API: most kills that land on a serving worker land mid-call
    return "booked"


def label(ctx: object) -> str:
    return "printed"


carrier_calls = (
    Flow.init("carrier-calls")
    .input("order", str)
    .step("call", call_carrier, rate_limit="carrier")
    .step("label", label)
)

FLOWS = {"carrier-calls": carrier_calls}
