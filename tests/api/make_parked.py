"""`python -m tests.api.make_parked EID [WORKFLOW]`: an execution of `holdable` (or WORKFLOW) under a
version nobody serves.

As if an older deployment had started it: the live server's tests see it parked (held, not failed).
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime

import django


async def make(execution_id: str, workflow_id: str = "holdable") -> None:
    from flowdeck.console import runtime
    from flowdeck.store import spi

    created = spi.Event(spi.EventKind.CREATED, workflow_id, execution_id, datetime.now(UTC), {})
    store = runtime.store()
    assert await store.create_execution_if_absent(
        execution_id, workflow_id, "0ld0ld0ld0ld0ld0", spi.Running(), created, {}
    )
    store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    asyncio.run(make(*sys.argv[1:3]))
