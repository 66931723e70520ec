"""W10's flow, as the console's flows module (`FLOWDECK_FLOW_MODULES = ["bench.live_flows"]`): `ticker`,
a `go` step that waits until the bench says the page is watching, then `steps` steps of `gap` seconds
each, one committed after the other. The environment sets its shape, so the web process and the worker
process build the same version."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from flowdeck.engine import Flow

STEPS_ENV = "FLOWDECK_BENCH_W10_STEPS"
GAP_ENV = "FLOWDECK_BENCH_W10_GAP"
GO_ENV = "FLOWDECK_BENCH_W10_GO"  # a file the bench creates once the page watches


def wait_for_go(ctx: Any) -> None:
    """Sync, so it runs on a thread: the file is made by another process, which no asyncio event hears."""
    path = Path(os.environ.get(GO_ENV, "/nonexistent"))
    deadline = time.monotonic() + 120
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


async def tick(ctx: Any) -> None:
    await asyncio.sleep(float(os.environ.get(GAP_ENV, "0.3")))


def ticker(steps: int) -> Flow:
    flow = Flow.init("ticker").step("go", wait_for_go)
    for i in range(steps):
        flow = flow.step(f"s{i}", tick)
    return flow


FLOWS = {"ticker": ticker(int(os.environ.get(STEPS_ENV, "50")))}
