"""`examples/shop/`, a Django project of its own with Flowdeck added, run as its developer would run it.

Its own settings, URLs and ASGI application (the console under `/ops/`), migrated on SQLite and on
PostgreSQL; daphne serves it and `flowdeck_workers` runs its flows. An order placed through the shop's view
starts its fulfilment in the view's transaction; the worker ships it with the ORM; the console under the
prefix shows it, its API answers there (and its JSON errors too), and its websocket is routed there.
"""

from __future__ import annotations

import base64
import http.cookiejar
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.support import PYTHON, ROOT, Background, free_port, sqlite_url
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = pytest.mark.slow

SHOP = ROOT / "examples" / "shop"
PASSWORD = "a shop operator's long password"
DATABASE = f"flowdeck_accept_shop_{os.getpid()}"


def shop_environment(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="shop.settings",
        PYTHONPATH=f"{SHOP}{os.pathsep}{ROOT}",
        PYTHONUNBUFFERED="1",
        SHOP_SECRET_KEY="the shop's test key, not a published one: " + "k" * 20,
        FLOWDECK_POLL_TIMEOUT_SECONDS="0.2",
    )
    return env


def shop_manage(env: dict[str, str], *args: str) -> str:
    import subprocess

    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=SHOP, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "shop.sqlite3")
        return
    require_postgres()
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    try:
        yield f"{POSTGRES_SERVER}/{DATABASE}"
    finally:
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


class Browser:
    """Cookies and CSRF, the way a browser posts a Django form."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.cookies = http.cookiejar.CookieJar()
        no_redirect = type("NoRedirect", (urllib.request.HTTPRedirectHandler,), {"redirect_request": _none})
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), no_redirect
        )

    def get(self, path: str) -> tuple[int, str, dict[str, str]]:
        return self._open(urllib.request.Request(self.base + path))

    def post_form(self, path: str, fields: dict[str, str]) -> tuple[int, str, dict[str, str]]:
        status, page, _ = self.get(path)
        assert status == 200, page
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None, page
        body = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token.group(1)}).encode()
        request = urllib.request.Request(self.base + path, data=body, method="POST")
        request.add_header("Referer", self.base + path)
        return self._open(request)

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.cookies if c.name == name and c.value is not None)

    def _open(self, request: urllib.request.Request) -> tuple[int, str, dict[str, str]]:
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode(), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), dict(error.headers)


def _none(*_: Any) -> None:
    return None


def wait_until(predicate: Any, what: str, timeout: float, explain: Any) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"no {what} within {timeout:g}s\n{explain()}")


def first_websocket_message(port: int, path: str, session: str) -> tuple[str, str]:
    """The handshake's status line and the first text frame the server sends (RFC 6455, unmasked)."""
    key = base64.b64encode(os.urandom(16)).decode()
    handshake = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"
        f"Cookie: sessionid={session}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(handshake.encode())
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(4096)
        head, _, rest = received.partition(b"\r\n\r\n")
        status = head.split(b"\r\n")[0].decode()
        while len(rest) < 2:
            rest += sock.recv(4096)
        length, start = rest[1] & 0x7F, 2
        if length == 126:
            while len(rest) < 4:
                rest += sock.recv(4096)
            length, start = int.from_bytes(rest[2:4], "big"), 4
        while len(rest) < start + length:
            rest += sock.recv(4096)
        return status, rest[start : start + length].decode()


def test_an_order_placed_in_the_shop_is_fulfilled_and_shown_in_its_console(
    database_url: str, tmp_path: Path
) -> None:
    env = shop_environment(database_url)
    shop_manage(env, "migrate", "--no-input")
    shop_manage(
        env,
        "shell",
        "-c",
        f"from django.contrib.auth.models import User; User.objects.create_user('operator', password={PASSWORD!r})",  # noqa: E501
    )
    port = free_port()
    web = Background(
        "shop-daphne",
        [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "shop.asgi:application"],
        env,
        tmp_path,
    )
    workers = Background("shop-workers", [PYTHON, str(SHOP / "manage.py"), "flowdeck_workers"], env, tmp_path)
    try:
        shopper = Browser(port)
        wait_until(lambda: _answers(shopper), "shop page", 60, web.explain)

        status, page, _ = shopper.post_form("/", {"customer": "ada", "item": "widget", "quantity": "0"})
        assert status == 400, page  # a refused order starts nothing
        assert "quantity" in page.lower(), page

        status, _, headers = shopper.post_form("/", {"customer": "ada", "item": "widget", "quantity": "3"})
        assert status == 302, headers
        order_path = headers["Location"]
        assert re.fullmatch(r"/orders/\d+/", order_path), order_path
        order_id = int(order_path.strip("/").split("/")[1])

        def shipped() -> bool:
            return 'id="status">shipped<' in shopper.get(order_path)[1]

        wait_until(shipped, "shipped order", 90, lambda: web.explain() + workers.explain())
        page = shopper.get(order_path)[1]
        assert f"TRK-{order_id:06d}" in page
        assert f'href="/ops/executions/order-{order_id}"' in page

        operator = Browser(port)
        status, _, headers = operator.post_form("/ops/login/", {"username": "operator", "password": PASSWORD})
        assert (status, headers.get("Location")) == (302, "/ops/executions/"), headers
        status, page, headers = operator.get(f"/ops/executions/order-{order_id}")
        assert status == 200, page
        assert "fulfil_order" in page
        assert "completed" in page
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert 'data-live-path="/ops/ws/live/"' in page  # the page connects where the ASGI app routes it

        status, body, _ = operator.get(f"/ops/api/v1/executions/order-{order_id}")
        assert status == 200, body
        described = json.loads(body)
        assert (described["status"], described["flowId"]) == ("completed", "fulfil_order")
        listed = shop_manage(env, "flowdeck", "ls", "--json")  # the refused order started nothing
        assert [e["execution_id"] for e in json.loads(listed)["items"]] == [f"order-{order_id}"]
        status, body, _ = operator.get("/ops/api/v1/no-such-route")
        assert (status, json.loads(body)["code"]) == (404, "route_not_found")

        handshake, message = first_websocket_message(
            port, f"/ops/ws/live/?execution=order-{order_id}&after=0", operator.cookie("sessionid")
        )
        assert handshake.startswith("HTTP/1.1 101"), handshake
        replayed = json.loads(message)
        assert replayed["type"] == "events"
        assert {e["execution_id"] for e in replayed["events"]} == {f"order-{order_id}"}
    finally:
        workers.close()
        web.close()


def _answers(browser: Browser) -> bool:
    try:
        return browser.get("/")[0] == 200
    except OSError:
        return False
