"""No 500 at the ASGI doors the Django test client does not pass through: the live websocket refuses a
filter no store could match with an application close code (nothing logged as an error), and the static
handler answers a path climbing out of the static folders with the styled 404 (no file, no traceback)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.testing import WebsocketCommunicator

from flowdeck.console import live
from flowdeck.store import spi
from flowdeck.store.django.store import DjangoStore
from tests.console.live_messages import next_event
from tests.console.test_live import _socket, alias  # noqa: F401  (fixture)
from tests.store.django_support import (  # noqa: F401  (fixtures)
    database_access,
    postgres_alias,
    sqlite_alias,
)


async def _closed(communicator: WebsocketCommunicator) -> dict[str, Any]:
    connected, _ = await communicator.connect()
    assert connected  # accepted, so that the page hears why it is closed
    return await communicator.receive_output(timeout=5)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("execution=a%00b", "execution: must not contain a NUL character (at position 1)"),
        ("workflow=%00", "workflow: must not contain a NUL character (at position 0)"),
        ("execution=" + "x" * 201, "execution: must be at most 200 characters (got 201)"),
        ("after=99999999999999999999", "after: must be a whole number from 0 to 9223372036854775807 (got "),
        ("after=%C2%B2", "after: must be a whole number from 0 to 9223372036854775807 (got '²')"),
    ],
)
async def test_a_filter_no_store_could_match_closes_the_socket_with_4400(
    alias: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
    query: str,
    reason: str,
) -> None:
    caplog.set_level(logging.INFO)
    closed = await _closed(_socket(query))
    assert closed["type"] == "websocket.close"
    assert closed["code"] == 4400
    assert closed["reason"].startswith(reason)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert live.feed().subscribers == 0  # refused before it subscribed


async def _legacy_row(using: str, eid: str) -> None:
    """A row as the store held it before the id rule: written through the store, as the engine no
    longer would."""
    store = DjangoStore(using, listen=False)
    try:
        created = spi.Event(spi.EventKind.CREATED, "counter", eid, datetime.now(UTC), {})
        assert await store.create_execution_if_absent(eid, "counter", "h", spi.Running(), created)
    finally:
        await store.aclose()


async def test_an_id_written_before_the_rule_can_still_be_watched(alias: str) -> None:  # noqa: F811
    await _legacy_row(alias, "legacy\nnewline")
    communicator = _socket("execution=legacy%0Anewline&after=0")
    connected, _ = await communicator.connect()
    assert connected
    event = await next_event(communicator)
    assert (event["execution_id"], event["kind"]) == ("legacy\nnewline", "Created")
    await communicator.disconnect()


# ------------------------------------------------------------------------------------------ static


@pytest.fixture
def application() -> Any:
    from flowdeck.console.asgi import application

    return application


async def _get(application: Any, path: str) -> dict[str, Any]:
    """Status and body of a GET, the application run to its end (so it closes what it opened)."""
    scope = {"type": "http", "http_version": "1.1", "method": "GET", "path": path, "query_string": b""}
    scope |= {"headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 1), "server": ("t", 80)}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(timeout=10)
    body = b""
    while True:
        chunk = await communicator.receive_output(timeout=10)
        body += chunk.get("body", b"")
        if not chunk.get("more_body"):
            break
    await communicator.wait(timeout=10)
    return {"status": start["status"], "body": body}


# daphne hands the application the path decoded (`%2f` is `/`); both spellings must be a 404
@pytest.mark.parametrize(
    "path",
    [
        "/static/../../console/settings.py",
        "/static/..%2f..%2fconsole/settings.py",
        "/static/flowdeck/console/../../../console/settings.py",
        "/static/a\x00b.css",
        "/static/nothing-here.css",
    ],
)
@pytest.mark.django_db
async def test_a_static_path_naming_no_static_file_is_the_styled_404(application: Any, path: str) -> None:
    response = await _get(application, path)
    body = response["body"].decode()
    assert response["status"] == 404
    assert "<h1>Not found</h1>" in body
    assert "SECRET_KEY" not in body
    assert "Traceback" not in body


@pytest.mark.django_db
async def test_a_static_file_is_still_served(application: Any) -> None:
    response = await _get(application, "/static/flowdeck/console/console.css")
    assert response["status"] == 200
    assert b"--ink:" in response["body"]
