"""Fixtures for console tests whose executions live on SQLite (the test database) and on PostgreSQL (the
store suite's migrated alias); users and sessions stay in the test database. A module imports
`_postgres_alias_first` and `backend_fixture` (the `backend` fixture; `engine_fixture` too for the
`engine` of the console tests' flows on that backend) and marks itself
`django_db(..., databases="__all__")`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from tests.store.django_support import postgres_alias, postgres_reachable

__all__ = ["_postgres_alias_first", "backend_fixture", "engine_fixture", "postgres_alias"]


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


@pytest.fixture(name="engine")
async def engine_fixture(backend: str) -> AsyncIterator[FlowEngine]:
    """This process's engine serving the console tests' flows, its executions on `backend`."""
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()
