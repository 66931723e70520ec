"""Test databases for the Django store: a SQLite file and a PostgreSQL database, each migrated once per
session under its own alias, emptied before every case.

PostgreSQL cases call `require_postgres()`: they skip when the server is unreachable, unless
`FLOWDECK_REQUIRE_POSTGRES=1`, when they fail.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connections

from flowdeck.console import settings as project_settings
from flowdeck.store.django import wakeups

SQLITE_ALIAS = "fd_sqlite"
POSTGRES_ALIAS = "fd_postgres"
POSTGRES_SERVER = os.environ.get("FLOWDECK_TEST_POSTGRES_SERVER", "postgresql://postgres@127.0.0.1:5432")
# One database per test session (several sessions may run at once on one server); a session removes its
# own at the end, and the next session removes those whose process is gone.
POSTGRES_DB_PREFIX = "flowdeck_test_store_"
POSTGRES_DB = f"{POSTGRES_DB_PREFIX}{os.getpid()}"
POSTGRES_URL = f"{POSTGRES_SERVER}/{POSTGRES_DB}"


def add_alias(alias: str, config: dict[str, Any]) -> None:
    """Make `alias` a configured database, as if settings had listed it."""
    settings.DATABASES[alias] = config
    configured = connections.configure_settings({"default": settings.DATABASES["default"], alias: config})
    connections.settings[alias] = configured[alias]


def remove_alias(alias: str) -> None:
    """Undo `add_alias` for a test's own alias: left configured, a later transactional test of this
    process would flush it (and meet whatever made it special: a server that is not there)."""
    with contextlib.suppress(Exception):  # from async code Django refuses; that thread opened none anyway
        connections[alias].close()
    with contextlib.suppress(AttributeError):
        del connections[alias]
    settings.DATABASES.pop(alias, None)
    connections.settings.pop(alias, None)


def postgres_reachable() -> bool:
    try:
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def require_postgres() -> None:
    """Skip (or, under FLOWDECK_REQUIRE_POSTGRES=1, fail) when PostgreSQL is unreachable."""
    if postgres_reachable():
        return
    message = f"PostgreSQL is unreachable at {POSTGRES_SERVER}"
    if os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{message} and FLOWDECK_REQUIRE_POSTGRES=1")
    pytest.skip(message)


def create_postgres_database(name: str = POSTGRES_DB) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        for (stale,) in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (POSTGRES_DB_PREFIX + "%",)
        ).fetchall():
            if stale != name and not _process_alive(stale.removeprefix(POSTGRES_DB_PREFIX)):
                conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def drop_postgres_database(name: str = POSTGRES_DB) -> None:
    for listener in wakeups.listeners_on(name):  # a store some test left open: its listener would retry
        listener.stop()
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _process_alive(pid: str) -> bool:
    if not pid.isdigit():
        return True  # not one of ours: leave it alone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sqlite_config(path: Path) -> dict[str, Any]:
    """The project's SQLite configuration (IMMEDIATE transactions, WAL) on another file."""
    return project_settings._database(f"sqlite:///{path}")


def database_url(alias: str) -> str:
    """The URL of the database `alias` names now, for another process or a connection of its own. Not
    always POSTGRES_URL: an alias added before pytest-django sets up its test databases is renamed to
    `test_…` with the rest."""
    config = connections[alias].settings_dict
    if connections[alias].vendor == "postgresql":
        return f"{POSTGRES_SERVER}/{config['NAME']}"
    return f"sqlite:///{config['NAME']}"


def postgres_url() -> str:
    """The URL of the store suite's PostgreSQL database as the alias names it now (see `database_url`)."""
    if POSTGRES_ALIAS in connections.databases:
        return database_url(POSTGRES_ALIAS)
    return POSTGRES_URL


def postgres_config(url: str = POSTGRES_URL) -> dict[str, Any]:
    return project_settings._database(url)


def truncate_store(alias: str) -> None:
    """Empty the store's tables on PostgreSQL by TRUNCATE, for a fixture that seeded a large store: the
    store's `reset()` deletes, which is the quick way for the few rows a case leaves and the slow way for
    100,000."""
    with connections[alias].cursor() as cursor:
        cursor.execute("TRUNCATE flowstore_execution, flowstore_wait, flowstore_event CASCADE")


def migrate(alias: str) -> None:
    call_command("migrate", database=alias, verbosity=0, interactive=False)


# Aliases already set up in this process. Test modules import these fixtures, so pytest may instantiate a
# "session" fixture once per importing module; the second time must find the first's database.
_PREPARED: set[str] = set()


# Both aliases are added after pytest-django has set up its test databases (`django_db_setup`): an alias
# already configured then would be taken over by pytest-django, renamed `test_…` and dropped at its
# teardown while the store's threads still hold connections to it. Which test a process runs first decides
# that, so under pytest-xdist it happened in one process and not the others.
@pytest.fixture(scope="session")
def sqlite_alias(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> str:
    if SQLITE_ALIAS not in _PREPARED:
        path = tmp_path_factory.mktemp("flowstore") / "store.sqlite3"
        add_alias(SQLITE_ALIAS, sqlite_config(path))
        with django_db_blocker.unblock():
            migrate(SQLITE_ALIAS)
        _PREPARED.add(SQLITE_ALIAS)
    return SQLITE_ALIAS


@pytest.fixture(scope="session")
def postgres_alias(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    require_postgres()
    if POSTGRES_ALIAS not in _PREPARED:
        create_postgres_database()
        add_alias(POSTGRES_ALIAS, postgres_config() | {"ENGINE": "tests.postgres_flush"})  # see its base.py
        with django_db_blocker.unblock():
            migrate(POSTGRES_ALIAS)
        _PREPARED.add(POSTGRES_ALIAS)
    yield POSTGRES_ALIAS
    if POSTGRES_ALIAS in _PREPARED:  # the first of the instances to end removes the database
        _PREPARED.discard(POSTGRES_ALIAS)
        connections[POSTGRES_ALIAS].close()
        drop_postgres_database()


@pytest.fixture
def database_access(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The store's own threads use committed data: no pytest-django test transaction, just access. After
    pytest-django's setup, for the same reason as the aliases: the tests add aliases of their own."""
    with django_db_blocker.unblock():
        if SQLITE_ALIAS in _PREPARED:
            _keep_token_counter(SQLITE_ALIAS)
        yield


def _keep_token_counter(alias: str) -> None:
    """SQLite's claim-token counter row, as its migration made it. A transactional test of another module
    that ran in this process may have flushed the alias (pytest-django truncates every table, the counter
    with the rest); the store's `reset()` keeps it, a flush does not."""
    from flowdeck.store.django.models import TokenCounter

    TokenCounter.objects.using(alias).get_or_create(id=1, defaults={"value": 0})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_alias(request: pytest.FixtureRequest, database_access: None) -> str:
    """Each backend's migrated alias in turn (PostgreSQL cases marked `postgres`)."""
    return str(request.getfixturevalue(f"{request.param}_alias"))
