"""The workflows the console tests serve besides the fulfilment examples (`tests.console.settings`).

`slow_undo` holds something whose undo takes a moment, then waits for `go`: cancelling it shows
Compensating before Cancelled. `hostile` has a node whose name is markup: every page must show it as
text. `counter` takes a model whose field has a bound, for the signal form's server-side errors.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from engine import Flow

HOSTILE_NAME = "<script>alert(1)</script>"


def release_slowly(ctx: object) -> None:
    time.sleep(1.5)


slow_undo = (
    Flow.init("slow_undo")
    .output("hold", lambda ctx: "held", type=str, compensate=release_slowly)
    .input("go", bool)
    .output("after", lambda ctx: "done", type=str)
)

hostile = Flow.init("hostile").input(HOSTILE_NAME, str).output("echo", lambda ctx: "ok", type=str)


class Count(BaseModel):
    n: int = Field(ge=1, description="how many")
    note: str = ""


counter = Flow.init("counter").input("count", Count).output("double", lambda ctx: ctx.count.n * 2, type=int)

FLOWS = {"slow_undo": slow_undo, "hostile": hostile, "counter": counter}
