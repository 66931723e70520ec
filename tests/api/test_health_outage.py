"""`GET /api/v1/health` while PostgreSQL refuses the web process: 503, whichever phase of the request meets
the refusal (the caller's token or session is read from the database before the store is asked), and 200
once it answers again. Never a 500.

The outage is real: the server's database stops accepting connections and its open ones are ended, as a
restart does. Nothing here opens the server's database itself; the switch is made from `postgres`.
"""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.request
from collections.abc import Iterator

import psycopg
import pytest

from tests.api.client import ApiClient, Live
from tests.api.conftest import serve
from tests.store.django_support import POSTGRES_SERVER


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A server of this module's own: the outage breaks its store's pooled connections, each failing once
    more when next used, which the shared server's later tests (in this process) must not meet."""
    with serve(tmp_path_factory, "outage") as server:
        yield server


# Each of the web process's connections the outage ended fails once more after it (the request that
# finds it broken drops it); the web process holds fewer than this.
AFTER_OUTAGE = 8


def _allow(database: str, allowed: bool) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,)
            )


@contextlib.contextmanager
def _refused(database: str) -> Iterator[None]:
    """The server's database refuses every connection, and the open ones are gone."""
    _allow(database, False)
    try:
        yield
    finally:
        _allow(database, True)


def test_health_is_503_while_the_database_refuses_and_200_after(live: Live, operator: ApiClient) -> None:
    by_session = ApiClient(live.base, session=live.credentials["operator_session"])
    assert operator.get("/health").status == 200
    with _refused(live.database):
        answers = [caller.get("/health") for caller in (operator, by_session, operator, by_session)]
    assert [answer.status for answer in answers] == [503] * 4
    refusal = {
        "error": "the database is unreachable; try again shortly",
        "code": "store_unavailable",
        "detail": None,
    }
    assert [answer.body for answer in answers] == [refusal] * 4
    assert all(answer.headers["Content-Type"] == "application/json; charset=utf-8" for answer in answers)

    statuses = [operator.get("/health").status for _ in range(AFTER_OUTAGE)]
    assert set(statuses) <= {503, 200}, statuses
    assert statuses[-1] == 200, statuses


def test_other_routes_are_503_too_while_the_database_refuses(live: Live, operator: ApiClient) -> None:
    with _refused(live.database):
        listed = operator.get("/workflows")
        unknown = ApiClient(live.base, token="not-a-token").get("/executions")
    assert (listed.status, listed.body["code"]) == (503, "store_unavailable")
    assert (unknown.status, unknown.body["code"]) == (503, "store_unavailable")


def test_console_pages_are_503_while_the_database_refuses(live: Live) -> None:
    """The console's pages (the health page an operator opens in an outage, the list) answer the styled
    503, never a 500, whichever read meets the refusal first; and 200 once the database is back."""
    by_session = ApiClient(live.base, session=live.credentials["operator_session"])

    def page(path: str) -> tuple[int, str]:
        request = urllib.request.Request(
            f"{live.base}{path}", headers={"Cookie": f"sessionid={by_session.session}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.read().decode()

    assert page("/health/")[0] == 200
    with _refused(live.database):
        answers = [page(path) for path in ("/health/", "/", "/health/", "/")]
    assert [status for status, _ in answers] == [503] * 4, answers
    assert all("The database is not answering" in text and "Traceback" not in text for _, text in answers)
    statuses = [page("/health/")[0] for _ in range(AFTER_OUTAGE)]
    assert set(statuses) <= {503, 200}, statuses
    assert statuses[-1] == 200, statuses
