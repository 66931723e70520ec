"""Flowdeck installed as a Django developer installs it (issue 28's fourth item): the wheel into a fresh
virtualenv outside the checkout, a project made by `django-admin startproject` with apps of its own named
`store` and `console` (the names Flowdeck's packages had), and the docs' settings applied as the docs show
them: the snippets are read from README.md and docs/django.md by their marks (`<!-- startproject: append
to FILE -->`), so docs and test cannot drift. Then, on SQLite (startproject's own `DATABASES`) and on
PostgreSQL (a database of its own, dropped after): `migrate`, a view of the host's `store` app that starts
a flow in its transaction (and one whose transaction rolls back, leaving nothing), `flowdeck_workers`
running it, and daphne serving the docs' asgi.py to Chromium: the console's login, its list, an execution
with its diagram drawn, and a static file. And `examples/shop`, copied out of the checkout, run in the same
virtualenv by the commands of its README."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.acceptance import wheel_support
from tests.acceptance.support import ROOT, Background, free_port
from tests.acceptance.test_shop import Browser, first_websocket_message
from tests.docs.fences import SHOP_README, blocks, startproject_snippets
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PASSWORD = "the host operator's long password"
DATABASE = f"flowdeck_wheel_host_{os.getpid()}"

# The host's own code, which no doc shows: its apps, an order model, a flow, the views that start it.
HOST_SETTINGS = """
# The test's own (not the docs'): the host's apps, and PostgreSQL when HOST_DATABASE_URL names it.
INSTALLED_APPS += ["store", "console"]

import os as _os  # noqa: E402

if _os.environ.get("HOST_DATABASE_URL"):
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(_os.environ["HOST_DATABASE_URL"])}
"""
HOST_URLS = """
from store import views as store_views  # noqa: E402

urlpatterns += [path("orders/", store_views.place), path("orders/<str:ref>/", store_views.order)]
"""
HOST_FILES = {
    "store/models.py": """
from django.db import models


class Order(models.Model):
    ref = models.CharField(max_length=20, unique=True)
    status = models.CharField(max_length=20, default="placed")
""",
    "store/flows.py": """
from flowdeck.engine import Flow

from store.models import Order


def ship(ctx):
    Order.objects.filter(pk=ctx.order_id).update(status="shipped")


ship_order = Flow.init("ship_order").input("order_id", int).step("ship", ship, atomic=True)
FLOWS = {"ship_order": ship_order}
""",
    "store/views.py": """
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from flowdeck.console import client

from store.models import Order


class Refused(Exception):
    pass


@csrf_exempt
@require_POST
def place(request):
    ref = request.POST["ref"]
    try:
        with transaction.atomic():
            order = Order.objects.create(ref=ref)
            client.start("ship_order", execution_id=f"order-{ref}", order_id=order.pk)
            if request.POST.get("refuse"):
                raise Refused  # after the start: the rollback must take the execution with it
    except Refused:
        return HttpResponse("refused", status=409)
    return HttpResponse(f"order-{ref}", status=201)


def order(request, ref):
    return HttpResponse(get_object_or_404(Order, ref=ref).status)
""",
}


@dataclass(frozen=True)
class Host:
    venv: wheel_support.Venv
    folder: Path

    def environment(self, database_url: str | None) -> dict[str, str]:
        extra = {"HOST_DATABASE_URL": database_url} if database_url else {}
        return wheel_support.clean_environment(FLOWDECK_POLL_TIMEOUT_SECONDS="0.2", **extra)

    def manage(self, env: dict[str, str], *args: str) -> str:
        return wheel_support.run([self.venv.python, "manage.py", *args], self.folder, env)

    def background(self, name: str, env: dict[str, str], logs: Path, *args: str) -> Background:
        return Background(name, [self.venv.python, *args], env, logs, cwd=self.folder)

    def append(self, name: str, text: str) -> None:
        """Add TEXT at the end of the project's module NAME, as the docs say to."""
        target = self.folder / "myshop" / name
        target.write_text(target.read_text() + "\n" + text.lstrip("\n"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> wheel_support.Venv:
    return wheel_support.install(wheel, tmp_path_factory.mktemp("wheel-venv") / "venv")


@pytest.fixture(scope="module")
def host(venv: wheel_support.Venv, tmp_path_factory: pytest.TempPathFactory) -> Host:
    """startproject and two startapps in a fresh virtualenv, the docs' snippets applied, the host's code
    written and its migrations made."""
    root = tmp_path_factory.mktemp("wheel-host")
    folder = root / "myshop"
    folder.mkdir()
    env = wheel_support.clean_environment()
    wheel_support.run([venv.python, "-m", "django", "startproject", "myshop", "."], folder, env)
    made = Host(venv, folder)
    made.manage(env, "startapp", "store")  # both clash with nothing Flowdeck installs
    made.manage(env, "startapp", "console")
    snippets = startproject_snippets()
    assert set(snippets) == {"settings.py", "urls.py", "asgi.py"}
    for name, snippet in snippets.items():
        made.append(name, snippet)
    made.append("settings.py", HOST_SETTINGS)
    made.append("urls.py", HOST_URLS)
    for name, text in HOST_FILES.items():
        (folder / name).write_text(text.lstrip("\n"))
    made.manage(env, "makemigrations", "store", "-v", "0")
    return made


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None: startproject's own SQLite settings, as they come."""
    if request.param == "sqlite":
        yield None
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


@pytest.mark.browser
def test_a_startproject_host_installs_the_wheel_and_runs_a_flow_from_its_view(
    host: Host, database_url: str | None, tmp_path: Path
) -> None:
    env = host.environment(database_url)
    host.manage(env, "migrate", "--no-input", "-v", "0")
    superuser = {"DJANGO_SUPERUSER_USERNAME": "operator", "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
    host.manage({**env, **superuser}, "createsuperuser", "--no-input", "--email", "op@example.com")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    web = host.background(
        "daphne", env, tmp_path, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "myshop.asgi:application"
    )
    workers = host.background("workers", env, tmp_path, "manage.py", "flowdeck_workers")
    try:
        _until_listening(web, port)
        assert _get(f"{base}/admin/login/")[0] == 200  # the host's own admin
        assert _post(f"{base}/orders/", ref="r1", refuse="1") == (409, "refused")
        assert _post(f"{base}/orders/", ref="a1") == (201, "order-a1")
        workers.wait_for(lambda: _get(f"{base}/orders/a1/") == (200, "shipped"), "the order shipped")
        assert _get(f"{base}/orders/r1/")[0] == 404  # the rolled-back order left no row ...
        listed = json.loads(host.manage(env, "flowdeck", "ls", "--json"))
        assert [item["execution_id"] for item in listed["items"]] == ["order-a1"]  # ... and no execution
        session = _browse_the_console(base)
        live = "/ops/ws/live/?execution=order-a1&after=0"
        handshake, message = first_websocket_message(port, live, session)
        assert handshake.startswith("HTTP/1.1 101"), handshake  # the docs' asgi.py routes the live feed
        assert json.loads(message)["type"] == "events"
        workers.signal(signal.SIGTERM)
        assert workers.finish() == 0, workers.explain()
    finally:
        workers.close()
        web.close()


def _browse_the_console(base: str) -> str:
    """Log in, the list, an execution's diagram drawn; the session's key."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{base}/ops/executions/")
            assert "/ops/login/" in page.url  # the console's own login, whatever the host's LOGIN_URL
            page.fill("input[name=username]", "operator")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ops/executions/")
            page.wait_for_selector("a[href='/ops/executions/order-a1']")
            script = page.request.get(f"{base}/static/flowdeck/console/console.js")  # the docs' asgi.py
            assert (script.status, script.headers["content-type"]) == (200, "text/javascript")
            page.goto(f"{base}/ops/executions/order-a1")
            page.wait_for_selector("#diagram svg", state="attached", timeout=60_000)
            assert errors == []
            return next(c["value"] for c in page.context.cookies() if c["name"] == "sessionid")
        finally:
            browser.close()


def _until_listening(web: Background, port: int) -> None:
    """Until this daphne serves the port (not another server that took the free port first)."""
    web.wait_for(lambda: f"Listening on TCP address 127.0.0.1:{port}" in web.stderr, "daphne listening")


def _get(url: str) -> tuple[int, str]:
    return _open(urllib.request.Request(url))


def _post(url: str, **fields: str) -> tuple[int, str]:
    return _open(urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), method="POST"))


def _open(request: urllib.request.Request) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_shop_runs_from_the_wheel_as_its_readme_says(venv: wheel_support.Venv, tmp_path: Path) -> None:
    """examples/shop/README.md's commands, in a copy of the shop outside the checkout: the key exported,
    `migrate`, then daphne (on a free port) beside the workers; an order placed through its page ships."""
    shop = tmp_path / "shop"
    ignore = shutil.ignore_patterns("__pycache__", "*.sqlite3*", "README.md")
    shutil.copytree(ROOT / "examples" / "shop", shop, ignore=ignore)
    (export, *commands) = _shop_commands()
    assert export.startswith("export SHOP_SECRET_KEY=")
    env = wheel_support.clean_environment(SHOP_SECRET_KEY="a test's key, " + "k" * 40)
    port = free_port()
    started: list[Background] = []
    try:
        for line in commands:
            steps = [shlex.split(step) for step in line.split(" & ")]
            for index, words in enumerate(steps):
                argv = _in_venv(words, venv, port)
                if len(steps) > 1:  # `A & B`: both run on, side by side
                    started.append(Background(words[0] + str(index), argv, env, tmp_path, cwd=shop))
                else:
                    wheel_support.run(argv, shop, env)
        assert len(started) == 2, "the README's second command serves the shop beside the workers"
        shopper = Browser(port)
        _until_listening(started[0], port)
        status, _, headers = shopper.post_form("/", {"customer": "ada", "item": "widget", "quantity": "2"})
        assert status == 302, headers
        order = headers["Location"]
        started[1].wait_for(lambda: 'id="status">shipped<' in shopper.get(order)[1], "the order shipped")
    finally:
        for process in started:
            process.close()


def _shop_commands() -> list[str]:
    (block,) = [b for b in blocks(SHOP_README) if b.language == "sh"]
    return [line for line in block.text.splitlines() if line.strip()]


def _in_venv(words: list[str], venv: wheel_support.Venv, port: int) -> list[str]:
    """A README command as the virtualenv runs it (daphne on the test's port rather than 8000)."""
    if words[0] == "python":
        return [venv.python, *words[1:]]
    assert words[0] == "daphne", words
    return [venv.python, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), *words[1:]]
