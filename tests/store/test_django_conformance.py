"""The conformance suite on the Django store: SQLite (a file, as embedded) and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from store.clock import ManualClock
from store.conformance import FlowStoreConformance
from store.django.store import DjangoStore
from tests.store.django_support import database_access, postgres_alias, sqlite_alias

__all__ = ["database_access", "postgres_alias", "sqlite_alias"]


class _DjangoConformance(FlowStoreConformance):
    alias: str

    def make_store(self, clock: ManualClock) -> DjangoStore:
        store = DjangoStore(self.alias, clock)
        store.reset()
        return store

    async def close_store(self, store: Any) -> None:
        await store.aclose()


class TestSqliteStoreConformance(_DjangoConformance):
    @pytest.fixture(autouse=True)
    def _on_sqlite(self, sqlite_alias: str, database_access: None) -> None:
        self.alias = sqlite_alias


@pytest.mark.postgres
class TestPostgresStoreConformance(_DjangoConformance):
    @pytest.fixture(autouse=True)
    def _on_postgres(self, postgres_alias: str, database_access: None) -> None:
        self.alias = postgres_alias
