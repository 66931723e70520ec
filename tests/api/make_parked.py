"""`python -m tests.api.make_parked EID`: an execution of `holdable` under a version nobody serves.

As if an older deployment had started it: the live server's tests see it parked (held, not failed).
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime

import django


async def make(execution_id: str) -> None:
    from console import runtime
    from store import spi

    created = spi.Event(spi.EventKind.CREATED, "holdable", execution_id, datetime.now(UTC), {})
    store = runtime.store()
    assert await store.create_execution_if_absent(
        execution_id, "holdable", "0ld0ld0ld0ld0ld0", spi.Running(), created, {}
    )
    store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    asyncio.run(make(sys.argv[1]))
