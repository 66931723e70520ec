"""The workflows the console tests serve besides the fulfilment examples (`tests.console.settings`).

`slow_undo` holds something whose undo waits to be released (`release_slowly`), then waits for `go`:
cancelling it shows Compensating before Cancelled. `hostile` has a node whose name is markup: every page
must show it as text. `counter` takes a model whose field has a bound, for the signal form's server-side
errors.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from flowdeck.engine import Flow
from flowdeck.engine.context import Context
from tests.console.big_flows import sixty

HOSTILE_NAME = "<script>alert(1)</script>"


def release_slowly(ctx: Context) -> None:
    """Held until the test says so (a file named after the execution in FLOWDECK_TEST_RELEASES), so a page
    watching the execution sees Compensating however slow the machine; without that folder, 1.5 s."""
    folder = os.environ.get("FLOWDECK_TEST_RELEASES")
    if not folder:
        time.sleep(1.5)
        return
    released = Path(folder) / ctx.execution_id
    deadline = time.monotonic() + 60
    while not released.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


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

FLOWS = {"slow_undo": slow_undo, "hostile": hostile, "counter": counter, "sixty": sixty}
