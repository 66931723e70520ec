"""`python -m tests.api.workers`: the engine's workers for the live API tests, until SIGTERM.

What `flowdeck_workers` does, kept here so the tests do not depend on the CLI.
"""

from __future__ import annotations

import asyncio
import os
import signal

import django


async def serve() -> None:
    from flowdeck.console import heartbeat, runtime

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    async with runtime.make_engine() as engine, heartbeat.publishing(engine):
        print("workers ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    asyncio.run(serve())
