"""Fixtures for console tests whose executions live on SQLite (the test database) and on PostgreSQL (the
store suite's migrated alias); users and sessions stay in the test database. A module imports
`_postgres_alias_first` and `backend_fixture` (the `backend` fixture) and marks itself
`django_db(..., databases="__all__")`."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.store.django_support import postgres_alias, postgres_reachable

__all__ = ["_postgres_alias_first", "backend_fixture", "postgres_alias"]


@pytest.fixture(scope="module", autouse=True)
def _postgres_alias_first(request: pytest.FixtureRequest) -> None:
    """Add the PostgreSQL alias before any case's databases are read, so each case may use it."""
    if postgres_reachable() or os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1":
        request.getfixturevalue("postgres_alias")


@pytest.fixture(name="backend", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_fixture(request: pytest.FixtureRequest, settings: Any) -> str:
    """Where the executions live: the test database (SQLite), or the migrated PostgreSQL alias."""
    if request.param == "postgres":
        settings.FLOWDECK_DATABASE_ALIAS = request.getfixturevalue("postgres_alias")
    return str(request.param)
