"""The workflows the API tests serve (FLOWDECK_FLOW_MODULES of `tests.api.settings`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from flowdeck.engine import Flow


class Order(BaseModel):
    id: str = Field(min_length=1)
    quantity: int = Field(ge=1)


class Address(BaseModel):
    street: str
    country: str = "NL"


class Parcel(BaseModel):
    weight_grams: int = Field(ge=1)
    address: Address


def wait_for_gate(ctx: Any) -> None:
    """Say it started (`<gate>.started`), then block until the file named by the `gate` input exists (the
    test opens it), at most a minute."""
    Path(ctx.gate + ".started").touch()
    deadline = time.monotonic() + 60
    while not Path(ctx.gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def explode(ctx: object) -> None:
    raise RuntimeError("the program has a mistake")


greet = Flow.init("greet").input("name", str).output("greeting", lambda ctx: f"hello {ctx.name}")

approval = (
    Flow.init("approval")
    .input("order", Order)
    .input("approved", bool)
    .output("verdict", lambda ctx: f"{ctx.order.id}: {'yes' if ctx.approved else 'no'}")
)

# Waits forever for `go`: what cancel and cancel-all tests park.
holdable = Flow.init("holdable").input("go", bool).output("went", lambda ctx: ctx.go)

# Parked only by the cancel-all test, so its count is that test's own.
parking = Flow.init("parking").input("go", bool).output("went", lambda ctx: ctx.go)

# Stops on its first attempt (F0001, a mistake in the program): what the operator verbs act on.
crashy = Flow.init("crashy").step("boom", explode).output("after", lambda ctx: "done")

# An input whose schema has `$defs` (a nested model): the OpenAPI document must carry them.
shipping = (
    Flow.init("shipping").input("parcel", Parcel).output("label", lambda ctx: ctx.parcel.address.street)
)

# Busy in `work` until the test opens the gate: what a cancel arriving mid-step meets.
gated = Flow.init("gated").input("gate", str).step("work", wait_for_gate).output("after", lambda ctx: "done")

FLOWS = {
    "gated": gated,
    "greet": greet,
    "approval": approval,
    "holdable": holdable,
    "parking": parking,
    "crashy": crashy,
    "shipping": shipping,
}
