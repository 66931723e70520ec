"""The console's websocket knows its caller by the session its cookie names, read at the handshake
(`console.socket_auth`): a logged-in page's socket opens and is answered; a session logged out, a cookie
naming no session, or a user deactivated is refused at the handshake (4401), through the whole ASGI
application."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import OperationalError
from django.test import Client

from flowdeck.console import live

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
    from flowdeck.console.asgi import application

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
    await _past_a_shared_cache_lock(sync_to_async(browser.logout))
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


# ------------------------------------------------------------------ an open socket ends with its session


async def _closed(socket: WebsocketCommunicator) -> Any:
    """What the server said last: the close, once every message before it was read."""
    while True:
        said = await socket.receive_output(timeout=5)
        if said["type"] == "websocket.close":
            return said


async def test_a_logout_closes_the_sockets_its_session_opened() -> None:
    browser, cookie = await sync_to_async(_logged_in)("olga")
    _, other = await sync_to_async(_logged_in)("ben")
    mine, _, _ = await _open(cookie)
    theirs, _, _ = await _open(other)
    # The logout writes too (axes records it, before the session is flushed, so a retry is whole)
    await _past_a_shared_cache_lock(sync_to_async(browser.logout))
    assert await _closed(mine) == {"type": "websocket.close", "code": 4401, "reason": "session ended"}
    await theirs.send_json_to({"type": "ping"})  # another session's socket stays open
    assert await theirs.receive_json_from(timeout=5) == {"type": "pong"}
    await theirs.disconnect()


async def _past_a_shared_cache_lock(write: Callable[[], Awaitable[Any]]) -> None:
    """The test's own write, waited past a shared-cache lock. The in-memory test database is SQLite's shared
    cache, whose table locks (SQLITE_LOCKED) the busy timeout does not wait for; the open sockets' threads
    read the session table meanwhile (CI saw "database table is locked"). The store waits these out the same
    way (bc22869); a file database, as a deployment has, never meets them."""
    give_up = time.monotonic() + 5
    while True:
        try:
            await write()
            return
        except OperationalError as error:
            if "table is locked" not in str(error) or time.monotonic() > give_up:
                raise
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("how", ["deleted", "expired", "deactivated"])
async def test_a_session_ended_elsewhere_closes_its_socket_at_the_next_recheck(how: str) -> None:
    """A logout served by another process (its session row deleted), an expiry, a deactivated user: none
    sends this process a signal; the periodic re-read of the sessions (`socket_sessions.recheck`) sees it."""
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    from flowdeck.console import socket_sessions

    _, cookie = await sync_to_async(_logged_in)("olga")
    _, kept = await sync_to_async(_logged_in)("ben")
    socket, _, _ = await _open(cookie)
    still, _, _ = await _open(kept)
    await socket_sessions.recheck()  # both sessions hold: nothing closes
    await socket.send_json_to({"type": "ping"})
    assert await socket.receive_json_from(timeout=5) == {"type": "pong"}
    session = Session.objects.filter(session_key=cookie)
    if how == "deleted":
        await _past_a_shared_cache_lock(session.adelete)
    elif how == "expired":
        await _past_a_shared_cache_lock(
            lambda: session.aupdate(expire_date=timezone.now() - timedelta(seconds=1))
        )
    else:
        users = get_user_model().objects.filter(username="olga")
        await _past_a_shared_cache_lock(lambda: users.aupdate(is_active=False))
    await socket_sessions.recheck()
    assert await _closed(socket) == {"type": "websocket.close", "code": 4401, "reason": "session ended"}
    await still.send_json_to({"type": "ping"})
    assert await still.receive_json_from(timeout=5) == {"type": "pong"}
    await still.disconnect()


async def test_a_bearer_token_opens_no_socket() -> None:
    """Tokens are for the API: a socket is a logged-in page's, so a revoked token has none left open."""
    from flowdeck.console.asgi import application
    from flowdeck.console.models import create_token

    token = await sync_to_async(lambda: create_token(get_user_model().objects.create_user("tia"), "t"))()
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    headers.append((b"authorization", f"Bearer {token}".encode()))
    connected, code = await WebsocketCommunicator(application, "/ws/live/", headers=headers).connect()
    assert (connected, code) == (False, 4401)


async def test_each_loop_rechecks_its_sockets_sessions_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-reading task runs while sockets are open (here with no pause between rounds)."""
    from django.contrib.sessions.models import Session

    from flowdeck.console import socket_sessions

    monkeypatch.setattr(socket_sessions, "RECHECK", timedelta(0))
    _, cookie = await sync_to_async(_logged_in)("olga")
    socket, _, _ = await _open(cookie)
    # the task reads the session table without pause meanwhile: the delete meets its shared-cache locks
    await _past_a_shared_cache_lock(Session.objects.filter(session_key=cookie).adelete)
    assert await _closed(socket) == {"type": "websocket.close", "code": 4401, "reason": "session ended"}
