"""What the child processes of `test_postgres_processes.py` run: each sets Django up on the given
database URL, opens its own `DjangoStore` (its own connections and LISTEN connection) and reports what
it claimed through a queue. Runs under the multiprocessing `spawn` start method."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from typing import Any

SERVED = frozenset({("wf1", "")})


def _setup(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "flowdeck.console.settings"
    import django

    django.setup()


def race_claims(url: str, name: str, start: Any, results: Any) -> None:
    """Claim (and hold) rows five at a time until an ask finds nothing; report every (id, token)."""
    _setup(url)
    from flowdeck.store.django.store import DjangoStore

    async def run() -> list[tuple[str, int]]:
        store = DjangoStore("default", pool_size=2, listen=False)
        got: list[tuple[str, int]] = []
        try:
            results.put((name, "ready"))
            start.wait(60)
            while True:
                claimed = await store.claim_ready(SERVED, name, timedelta(minutes=5), 5, timedelta(0))
                if not claimed:
                    return got
                got.extend((c.state.execution_id, c.state.claim_token or 0) for c in claimed)
        finally:
            await store.aclose()

    results.put((name, asyncio.run(run())))


def claim_once(url: str, name: str, lease: float, timeout: float, results: Any, start: Any = None) -> None:
    """One blocking claim_ready (once `start` is set, if given); report what it got, its tokens and how
    long it blocked."""
    _setup(url)
    from flowdeck.store.django.store import DjangoStore

    async def run() -> tuple[list[tuple[str, int]], float]:
        store = DjangoStore("default", pool_size=2)
        try:
            results.put((name, "polling"))
            if start is not None:
                start.wait(60)
            began = time.monotonic()
            claimed = await store.claim_ready(
                SERVED, name, timedelta(seconds=lease), 5, timedelta(seconds=timeout)
            )
            took = time.monotonic() - began
            return [(c.state.execution_id, c.state.claim_token or 0) for c in claimed], took
        finally:
            await store.aclose()

    results.put((name, asyncio.run(run())))
