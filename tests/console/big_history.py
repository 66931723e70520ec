"""A long history written through the store contract: `python -m tests.console.big_history EID [N]` (or
`write(store, eid, n)` in-process) makes execution EID of `counter` whose history holds N events (10,000 by
default): a foreach of N/3 items, every third item retried once, then a claim left open. No workers
serve its hash, so nothing moves it on."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

from flowdeck.store import spi

HASH = "big-history"


async def write(store: spi.FlowStore, execution_id: str, n: int = 10_000) -> None:
    now = store.now()

    def event(kind: spi.EventKind, ms: int, **data: object) -> spi.Event:
        return spi.Event(kind, "counter", execution_id, now + timedelta(milliseconds=ms), data)

    created = event(spi.EventKind.CREATED, 0)
    claimed = await store.create_claimed_if_absent(
        execution_id, "counter", HASH, spi.Running(), created, executor_id="big", lease=timedelta(hours=1)
    )
    assert claimed is not None, f"{execution_id} exists already"
    events = [event(spi.EventKind.EXECUTION_CLAIMED, 1, executor_id="big")]
    item = 0
    while len(events) < n - 2:
        path, at = f"items~{item}", 2 + item * 3
        events.append(event(spi.EventKind.STEP_STARTED, at, step_name=path))
        if item % 3 == 0 and len(events) < n - 3:
            events.append(
                event(
                    spi.EventKind.STEP_RETRIED, at + 1, step_name=path, attempt=1, error="busy", delay=0.001
                )
            )
        events.append(event(spi.EventKind.STEP_COMPLETED, at + 2, step_name=path))
        item += 1
    last = event(spi.EventKind.STEP_STARTED, 2 + item * 3, step_name="after")
    await claimed.append_event(last, preceding=events[: n - 2])


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    from flowdeck.console import runtime

    async def main() -> None:
        await write(
            (await runtime.engine()).store, sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
        )

    asyncio.run(main())
