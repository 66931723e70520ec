"""The conformance suite on the Django store: SQLite (a file, as embedded) and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.conformance import FlowStoreConformance, InProcessBlockingConformance
from flowdeck.store.conformance.support import SAFETY, SERVED, WF2, StoreFixture, seconds
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import database_access, postgres_alias, sqlite_alias

__all__ = ["database_access", "postgres_alias", "sqlite_alias"]

# Two threads (connections) are enough for the concurrent cases, and keep many parallel test sessions
# within the server's connection limit.
TEST_POOL = 2


class _OnDjango:
    """make_store/close_store on the alias the subclass's fixture chose; every case starts empty."""

    alias: str

    def make_store(self, clock: ManualClock) -> DjangoStore:
        store = DjangoStore(self.alias, clock, pool_size=TEST_POOL)
        store.reset()
        return store

    async def close_store(self, store: Any) -> None:
        await store.aclose()

    async def wall_step_case(self, fx: StoreFixture, step: timedelta) -> None:
        """InProcessBlockingConformance's case with the same assertions, waiting for "blocked on the clock
        OR answered" after each advance: this store's final ask runs on a database thread, so it does not
        finish within the few loop turns that `settle()` gives it."""
        start = fx.clock.monotonic()
        poll = fx.start_poll(served=SERVED, timeout=seconds(5))
        await fx.blocked()
        fx.clock.step_wall(step)
        await fx.clock.advance(1)
        await fx.mk_execution("e2", WF2)  # a write the poll cannot claim
        for _ in range(59):
            await _blocked_or_done(fx, poll)
            if poll.done():
                break
            await fx.clock.advance(1)
            await settle()
        await _blocked_or_done(fx, poll)
        assert poll.done(), "the poll outlived a minute of monotonic time"
        assert await poll == []
        assert 5 <= fx.clock.monotonic() - start < 60


async def _blocked_or_done(fx: StoreFixture, poll: asyncio.Task[Any]) -> None:
    give_up = time.monotonic() + SAFETY
    while fx.clock.pending_sleeps() < 1 and not poll.done():
        assert time.monotonic() < give_up, "the poll neither blocked on the clock nor answered"
        await asyncio.sleep(0.001)


class _OnSqlite(_OnDjango):
    @pytest.fixture(autouse=True)
    def _on_sqlite(self, sqlite_alias: str, database_access: None) -> None:
        self.alias = sqlite_alias


class _OnPostgres(_OnDjango):
    @pytest.fixture(autouse=True)
    def _on_postgres(self, postgres_alias: str, database_access: None) -> None:
        self.alias = postgres_alias


class TestSqliteStoreConformance(_OnSqlite, FlowStoreConformance):
    pass


class TestSqliteStoreInProcessBlocking(_OnSqlite, InProcessBlockingConformance):
    pass


@pytest.mark.postgres
class TestPostgresStoreConformance(_OnPostgres, FlowStoreConformance):
    pass


@pytest.mark.postgres
class TestPostgresStoreInProcessBlocking(_OnPostgres, InProcessBlockingConformance):
    pass
