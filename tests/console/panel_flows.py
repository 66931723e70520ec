"""The workflows the node panel's tests run: one per thing the panel shows (attempts and a failure, a
compensated node, a foreach, a sleep). Inputs and hostile names come from `tests.console.flows`."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.engine import Flow, FlowDomainError, Schedule


class Refused(FlowDomainError):
    """The shop said no."""


def charge(ctx: object) -> None:
    raise ConnectionError("card network unreachable")


def refuse(ctx: object) -> None:
    raise Refused("the order is over the limit")


def release(ctx: object) -> None:
    return None


flaky = Flow.init("flaky").step(
    "charge",
    charge,
    description="charge the card",
    tags=("payments", "external"),
    timeout=timedelta(seconds=5),
    retry=Schedule.fixed(timedelta(0)).take(2),
    retry_on=(ConnectionError,),
)

undone = (
    Flow.init("undone")
    .output("reserve", lambda ctx: {"sku": "piano", "qty": 1}, type=dict, compensate=release)
    .step("refuse", refuse)
)

fanout = Flow.init("fanout").foreach("items", lambda ctx: [1, 2, 3], lambda item: item * 10, type=int)

napper = Flow.init("napper").sleep("nap", timedelta(hours=1), description="let the dust settle")

FLOWS = {"flaky": flaky, "undone": undone, "fanout": fanout, "napper": napper}
