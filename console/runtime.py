"""This process's store and engine, shared by the API, the console views, the consumers and the commands.

The web process needs the engine's surfaces (start, signal, describe, search, operator verbs) but runs no
workers: `engine()` answers a `FlowEngine` whose flows are registered and whose worker pool is never started.
`runworkers` builds its own engine with workers (see `make_engine`).
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

from console.conf import flowdeck_settings
from console.discovery import registered_flows
from engine.engine import FlowEngine
from store.django.store import DjangoStore

__all__ = ["engine", "make_engine", "reset", "store"]

_lock = threading.RLock()  # engine() builds the store under the same lock
_store: DjangoStore | None = None
_engine: FlowEngine | None = None
_registered = False


def store() -> DjangoStore:
    """The process's store on the configured database alias."""
    global _store
    with _lock:
        if _store is None:
            _store = DjangoStore(using=flowdeck_settings().database_alias)
        return _store


def make_engine(
    *,
    workers: int | None = None,
    lease: timedelta | None = None,
    renew_every: timedelta | None = None,
    batch_size: int | None = None,
    poll_timeout: timedelta | None = None,
) -> FlowEngine:
    """A FlowEngine on this process's store serving every discovered flow; settings fill the rest."""
    conf = flowdeck_settings()
    return FlowEngine(
        store(),
        tuple(registered_flows().values()),
        workers=conf.workers if workers is None else workers,
        lease=conf.lease if lease is None else lease,
        renew_every=conf.renew_every if renew_every is None else renew_every,
        batch_size=conf.batch_size if batch_size is None else batch_size,
        poll_timeout=conf.poll_timeout if poll_timeout is None else poll_timeout,
    )


async def engine() -> FlowEngine:
    """The web process's engine: flows registered (once per process), workers not running."""
    global _engine, _registered
    with _lock:
        if _engine is None:
            _engine = FlowEngine(store(), ())
    if not _registered:
        for workflow_id, flow in registered_flows().items():
            await _engine.register(workflow_id, flow)
        _registered = True
    return _engine


def reset() -> None:
    """Forget the process's store and engine (tests that switch databases call this)."""
    global _store, _engine, _registered
    with _lock:
        if _store is not None:
            _store.close()
        _store, _engine, _registered = None, None, False


def run(coro: object) -> object:
    """Run a coroutine from synchronous code (management commands)."""
    return asyncio.run(coro)  # type: ignore[arg-type]
