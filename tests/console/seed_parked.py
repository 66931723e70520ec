"""`python -m tests.console.seed_parked [ID]`: the demo's parked execution (`demo-parked`, or `ID`, started
under the previous version of `fulfilment`, which no process serves) in the database `DATABASE_URL` names,
as the demo seeds it (console/demo.py)."""

from __future__ import annotations

import asyncio
import os
import sys

import django


async def seed(execution_id: str | None) -> None:
    from flowdeck.console import demo, runtime
    from flowdeck.engine.engine import FlowEngine

    store = runtime.store()
    try:
        await demo.seed_parked(store, *([execution_id] if execution_id else []))
        # As the demo does: the current versions registered after the parked one are the newest again
        # (a store's newest version is the one registered last, and the live server registered its own
        # before this seed ran).
        await runtime.serve(FlowEngine(store))
    finally:
        store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    asyncio.run(seed(sys.argv[1] if len(sys.argv) > 1 else None))
