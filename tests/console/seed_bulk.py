"""`python -m tests.console.seed_bulk`: for the bulk browser test, in the database `DATABASE_URL` names,
parked executions of `fulfilment` whose dry run onto the newest version differs: two started under the
previous version (`bulk-clean-1`, `-2`: they resume cleanly) and one under a version that also took an
input `legacy`, which the newest never asks for (`bulk-f0101`). The current versions are registered again
last, so they are the newest."""

from __future__ import annotations

import asyncio
import os

import django


async def seed() -> None:
    from flowdeck.console import demo, discovery, runtime
    from flowdeck.engine.engine import FlowEngine

    store = runtime.store()
    try:
        old = FlowEngine(store)
        previous = discovery.flows_of("examples.fulfilment.previous")["fulfilment"][-1]
        await old.register("fulfilment", previous)
        order = {"order": demo.order("o-0998", *demo.SMALL, customer="bulk")}
        for eid in ("bulk-clean-1", "bulk-clean-2"):
            await old.workflows.start("fulfilment", execution_id=eid, inputs=order)
        legacy = FlowEngine(store)
        await legacy.register("fulfilment", previous.input("legacy", int))
        await legacy.workflows.start("fulfilment", execution_id="bulk-f0101", inputs={**order, "legacy": 1})
        await runtime.serve(FlowEngine(store))
    finally:
        store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    asyncio.run(seed())
