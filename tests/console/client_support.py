"""Fixtures of the application-client tests (`flowdeck.console.client`): the process's store on each backend's
migrated alias (a SQLite file in WAL mode, as a deployment has it, and PostgreSQL), emptied per case,
serving `tests.console.client_flows`; and workers running on a store of their own, on a thread of their
own, as another process's would (they hear of a commit as another process does: NOTIFY on PostgreSQL,
the data version on SQLite)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry.trace import TracerProvider

from flowdeck.console import runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.store.django.store import DjangoStore
from tests.console import client_flows
from tests.store.django_support import database_access, postgres_alias, sqlite_alias

__all__ = ["Workers", "alias_fixture", "database_access", "postgres_alias", "sqlite_alias", "workers_fixture"]


@pytest.fixture(name="alias", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def alias_fixture(request: pytest.FixtureRequest, database_access: None, settings: Any) -> Iterator[str]:
    """The backend's alias, made the store's (`FLOWDECK_DATABASE_ALIAS`), emptied; the client's flows
    discovered."""
    alias = str(request.getfixturevalue(f"{request.param}_alias"))
    settings.FLOWDECK_DATABASE_ALIAS = alias
    discover(["tests.console.client_flows"])
    runtime.reset()
    runtime.store().reset()
    yield alias
    runtime.reset()


class Workers:
    """An engine's workers on their own store, loop and thread, serving `flows` (the client's by default);
    `stop()` ends them."""

    def __init__(
        self,
        alias: str,
        poll: timedelta,
        flows: Mapping[str, Flow] | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.store = DjangoStore(alias)
        self._poll = poll
        self._tracer_provider = tracer_provider
        self._flows = client_flows.FLOWS if flows is None else flows
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), name="test-workers")
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the workers did not start")

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        engine = FlowEngine(
            self.store, (), workers=1, poll_timeout=self._poll, tracer_provider=self._tracer_provider
        )
        for name, flow in self._flows.items():
            await engine.register(name, flow)
        try:
            async with engine:
                self._ready.set()
                await self._stop.wait()
        finally:
            await self.store.aclose()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(name="workers")
def workers_fixture(alias: str) -> Iterator[Workers]:
    """Workers whose poll would wait 30 s for nothing: what they run sooner, a wake-up brought them."""
    workers = Workers(alias, timedelta(seconds=30))
    yield workers
    workers.stop()
