"""Worker processes publish their engine's health to the store, for the console to show.

`FlowEngine.health()` answers for one engine; the web process's own engine runs no workers (the demo runs
its workers' engine beside it: `in_this_process`). So every process that runs workers (`flowdeck_workers`,
the demo) records a heartbeat every `FLOWDECK_HEARTBEAT_SECONDS` (default 5) through the store contract's
`record_heartbeat`, and a last one with no worker alive when it stops. A heartbeat that cannot be written
is logged and retried at the next beat: the workers never stop for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from flowdeck.console.conf import flowdeck_settings
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import heartbeats, spi

__all__ = ["ExecutorView", "executors", "heartbeat_interval", "in_this_process", "publishing", "record"]

logger = logging.getLogger("flowdeck.console.heartbeat")

# An executor shows when it was heard from this recently; it is stale after this many missed beats.
HEARD_WITHIN = timedelta(minutes=1)
STALE_AFTER_BEATS = 3


# The engines publishing from this process now (the demo runs its workers beside the web server), so the
# health page can say what this process runs without asking the store.
_PUBLISHING: dict[str, FlowEngine] = {}


def in_this_process() -> list[FlowEngine]:
    """The engines of this process that publish their health now (their workers run here), by executor."""
    return [engine for _, engine in sorted(_PUBLISHING.items())]


def heartbeat_interval() -> timedelta:
    return flowdeck_settings().heartbeat


def _beat_of(engine: FlowEngine, started: datetime, *, stopped: bool) -> heartbeats.Heartbeat:
    health = engine.health()
    return heartbeats.Heartbeat(
        executor_id=health.executor_id,
        host=socket.gethostname(),
        pid=os.getpid(),
        started=started,
        workers_alive=0 if stopped else health.workers_alive,
        workers_configured=health.workers_configured,
        poll_failures=health.poll_failures,
        # the store keeps the count of store failures; the poll failure is the one shown
        last_poll_failure=health.last_poll_failure,
        last_poll_failure_at=health.last_poll_failure_at,
        store_failures=health.store_failures,
        claims_held=tuple(str(c) for c in health.claims_held),
    )


async def record(engine: FlowEngine, started: datetime, *, stopped: bool = False) -> bool:
    """One heartbeat of `engine`; answers whether it was written (a failure is logged, never raised)."""
    try:
        await engine.store.record_heartbeat(_beat_of(engine, started, stopped=stopped))
    except Exception as error:  # any store trouble: the workers go on, the next beat tries again
        logger.warning(
            "could not record the heartbeat of %s: %s",
            engine.executor_id,
            error,
            extra={"action": "heartbeat"},
        )
        return False
    return True


async def _beating(engine: FlowEngine, started: datetime, every: timedelta) -> None:
    while True:
        await asyncio.sleep(every.total_seconds())
        await record(engine, started)


@contextlib.asynccontextmanager
async def publishing(engine: FlowEngine, every: timedelta | None = None) -> AsyncIterator[None]:
    """Publish `engine`'s health while the block runs (enter it once the workers run): a beat at once,
    one every `every`, and a last one with no worker alive on the way out."""
    started = engine.store.now()
    await record(engine, started)
    beating = asyncio.create_task(_beating(engine, started, every or heartbeat_interval()))
    _PUBLISHING[engine.executor_id] = engine
    try:
        yield
    finally:
        _PUBLISHING.pop(engine.executor_id, None)
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        await record(engine, started, stopped=True)


# ----------------------------------------------------------------------------------- reading them


@dataclasses.dataclass(frozen=True)
class ExecutorView:
    """One executor's latest heartbeat, as the console and the API show it."""

    executor_id: str
    host: str
    pid: int
    started: datetime
    updated: datetime
    age_seconds: float
    workers_alive: int
    workers_configured: int
    poll_failures: int
    last_poll_failure: str | None
    last_poll_failure_at: datetime | None
    store_failures: int
    claims_held: tuple[str, ...]
    stale: bool

    @property
    def healthy(self) -> bool:
        """Every configured worker alive, and heard from lately (`Health.is_healthy`, across processes)."""
        return not self.stale and self.workers_alive == self.workers_configured

    @property
    def state(self) -> str:
        if self.stale:
            return "stale"
        if self.workers_alive == 0:
            return "stopped"
        return "healthy" if self.healthy else "unhealthy"


async def executors(store: spi.FlowStore, within: timedelta = HEARD_WITHIN) -> list[ExecutorView]:
    """The executors heard from within `within`, by executor id."""
    now = store.now()
    stale_after = (heartbeat_interval() * STALE_AFTER_BEATS).total_seconds()
    found = []
    for beat in await store.list_heartbeats(within):
        age = max((now - beat.updated).total_seconds(), 0.0)
        fields = {f.name: getattr(beat, f.name) for f in dataclasses.fields(beat)}
        found.append(ExecutorView(**fields, age_seconds=age, stale=age > stale_after))
    return found
