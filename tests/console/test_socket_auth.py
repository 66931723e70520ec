"""The console's websocket knows its caller by the session its cookie names, read at the handshake
(`console.socket_auth`): a logged-in page's socket opens and is answered; a session logged out, a cookie
naming no session, or a user deactivated is refused at the handshake (4401), through the whole ASGI
application."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from console import live

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def _fresh_feed() -> Iterator[None]:
    live.reset()
    yield
    live.reset()


def _logged_in(name: str) -> tuple[Client, str]:
    """A browser logged in as a new user `name`, and its session cookie."""
    browser = Client()
    browser.force_login(get_user_model().objects.create_user(name))
    return browser, browser.cookies[settings.SESSION_COOKIE_NAME].value


async def _open(cookie: str) -> tuple[WebsocketCommunicator, bool, Any]:
    from console.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    socket = WebsocketCommunicator(application, "/ws/live/", headers=headers)
    connected, code = await socket.connect()
    return socket, connected, code


async def test_a_logged_in_page_opens_its_socket_and_is_answered() -> None:
    _, cookie = await sync_to_async(_logged_in)("olga")
    socket, connected, _ = await _open(cookie)
    assert connected
    await socket.send_json_to({"type": "ping"})
    assert await socket.receive_json_from(timeout=5) == {"type": "pong"}
    await socket.disconnect()


async def test_a_logged_out_session_is_refused_at_the_handshake() -> None:
    browser, cookie = await sync_to_async(_logged_in)("olga")
    await sync_to_async(browser.logout)()
    _, connected, code = await _open(cookie)
    assert (connected, code) == (False, 4401)


async def test_a_cookie_naming_no_session_is_refused() -> None:
    _, connected, code = await _open("no-such-session-key-at-all")
    assert (connected, code) == (False, 4401)


async def test_a_deactivated_users_session_is_refused() -> None:
    _, cookie = await sync_to_async(_logged_in)("olga")
    await get_user_model().objects.filter(username="olga").aupdate(is_active=False)
    _, connected, code = await _open(cookie)
    assert (connected, code) == (False, 4401)
