"""`python -m tests.console.writer`: another process writing to the store, for the live-feed tests.

Each line read from stdin is an execution id: it starts a `counter` execution with that id (no workers)
and prints `{"id": ..., "committed": <time.time() once the write is committed>}`; a line `signal ID N`
delivers that execution's `count` input `{"n": N}` and prints the same. `DATABASE_URL` picks the
database.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import django


async def serve() -> None:
    from flowdeck.console import runtime
    from flowdeck.console.discovery import discover

    discover(["tests.console.flows"])
    engine = await runtime.engine()
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        eid, *signal = line.split()
        if eid == "signal":
            eid = signal[0]
            await engine.executions.signal(eid, "count", {"n": int(signal[1])})
        else:
            await engine.workflows.start("counter", execution_id=eid)
        print(json.dumps({"id": eid, "committed": time.time()}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    asyncio.run(serve())
