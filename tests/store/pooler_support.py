"""The store suite's PostgreSQL database behind a private PgBouncer (bench/pgbouncer.py): one pooler per
test session, and two aliases through it: `fd_pooled` (the transaction-mode pool, what every connection of
the store uses but one) and `fd_pooled_session` (the same database's session-mode entry, for the LISTEN
connection).

A machine without the `pgbouncer` binary skips these tests, unless `FLOWDECK_REQUIRE_POSTGRES=1` (CI), when
they fail: CI installs it (.ci/run).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from bench import pgbouncer
from flowdeck.store.django.pooling import Pooling
from tests.store.django_support import (
    POSTGRES_DB,
    POSTGRES_SERVER,
    add_alias,
    postgres_alias,
    postgres_config,
    remove_alias,
)

__all__ = ["POOLED_ALIAS", "POOLING", "SESSION_ALIAS", "pgbouncer_running", "pooled_alias", "postgres_alias"]

POOLED_ALIAS = "fd_pooled"
SESSION_ALIAS = "fd_pooled_session"
POOLING = Pooling(transaction=True, listen_using=SESSION_ALIAS)


def require_pgbouncer() -> None:
    """Skip (or, under FLOWDECK_REQUIRE_POSTGRES=1, fail) when there is no pgbouncer binary."""
    try:
        pgbouncer.binary()
    except pgbouncer.PgBouncerMissing as missing:
        if os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{missing} and FLOWDECK_REQUIRE_POSTGRES=1")
        pytest.skip(str(missing))


def pooled_config(url: str) -> dict[str, Any]:
    """The project's PostgreSQL configuration on a pooler's URL: Django's named cursors off, as Django asks
    behind a transaction-mode pool (a cursor outside a transaction is declared WITH HOLD)."""
    return postgres_config(url) | {"DISABLE_SERVER_SIDE_CURSORS": True}


def server_address() -> tuple[str, int]:
    """The host and port of the suite's PostgreSQL server (FLOWDECK_TEST_POSTGRES_SERVER)."""
    address = POSTGRES_SERVER.rsplit("@", 1)[-1]
    host, _, port = address.partition(":")
    return host, int(port or 5432)


@pytest.fixture(scope="session")
def pgbouncer_running(postgres_alias: str) -> Iterator[pgbouncer.PgBouncer]:
    """A PgBouncer in front of the suite's server, the store database also in session mode."""
    require_pgbouncer()
    host, port = server_address()
    with pgbouncer.running(server_host=host, server_port=port, databases=[POSTGRES_DB]) as bouncer:
        yield bouncer


@pytest.fixture(scope="session")
def pooled_alias(pgbouncer_running: pgbouncer.PgBouncer, postgres_alias: str) -> Iterator[str]:
    """The migrated store database through the pooler (migrated directly, by `postgres_alias`)."""
    add_alias(POOLED_ALIAS, pooled_config(pgbouncer_running.url(POSTGRES_DB)))
    add_alias(SESSION_ALIAS, postgres_config(pgbouncer_running.url(POSTGRES_DB, session=True)))
    yield POOLED_ALIAS
    for alias in (POOLED_ALIAS, SESSION_ALIAS):
        remove_alias(alias)  # closes it if it is still configured: a test may have reset the aliases
