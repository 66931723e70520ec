"""The workflows the console tests serve besides the fulfilment examples (`tests.console.settings`).

`slow_undo` holds something whose undo takes a moment, then waits for `go`: cancelling it shows
Compensating before Cancelled. `hostile` has a node whose name is markup: every page must show it as text.
"""

from __future__ import annotations

import time

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

FLOWS = {"slow_undo": slow_undo, "hostile": hostile}
