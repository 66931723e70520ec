"""The conformance suite on the PostgreSQL store behind PgBouncer in transaction mode (issue 32, point 1):
every connection of the store through the pooler, the LISTEN connection through its session-mode entry."""

from __future__ import annotations

import pytest

from flowdeck.store.clock import ManualClock
from flowdeck.store.conformance import FlowStoreConformance, InProcessBlockingConformance
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import database_access
from tests.store.pooler_support import POOLING, pgbouncer_running, pooled_alias, postgres_alias
from tests.store.test_django_conformance import TEST_POOL, _OnDjango

__all__ = ["database_access", "pgbouncer_running", "pooled_alias", "postgres_alias"]


class _OnPooled(_OnDjango):
    @pytest.fixture(autouse=True)
    def _on_pooled(self, pooled_alias: str, database_access: None) -> None:
        self.alias = pooled_alias

    def make_store(self, clock: ManualClock) -> DjangoStore:
        store = DjangoStore(self.alias, clock, pool_size=TEST_POOL, pooling=POOLING)
        store.reset()
        return store


@pytest.mark.postgres
class TestPooledStoreConformance(_OnPooled, FlowStoreConformance):
    pass


@pytest.mark.postgres
class TestPooledStoreInProcessBlocking(_OnPooled, InProcessBlockingConformance):
    pass
