"""The console for a read-only user (logged in, no permission): every page reads, no form changes
anything. Starting and signalling need `console.run_executions`; their forms are hidden without it, and
posting them anyway is refused (403: the message in place for htmx, a styled page otherwise)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient
from django.utils import timezone

from flowdeck.console import demo
from flowdeck.console.models import ApiToken, create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import PAGES, _user, engine, operator, viewer

__all__ = ["engine", "operator", "viewer"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HTMX = {"headers": {"HX-Request": "true"}}
SAYS = "You need the &#x27;flowdeck_console.run_executions&#x27; permission to do this."


@pytest.fixture
async def runner(engine: FlowEngine) -> AsyncClient:
    """May start and signal; no operator verbs."""
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("rita", False, True))
    return client


async def test_a_read_only_user_sees_every_page(engine: FlowEngine, viewer: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="e1")
    assert {path: (await viewer.get(path)).status_code for path in PAGES} == dict.fromkeys(PAGES, 200)


async def test_a_read_only_user_may_not_start(engine: FlowEngine, viewer: AsyncClient) -> None:
    form = {"execution_id": "ro-1", "input:count": '{"n": 2}'}
    in_place = await viewer.post("/workflows/counter/start/", form, **HTMX)
    assert in_place.status_code == 403
    assert in_place.content.decode() == f'<p class="message error" role="status">{SAYS}</p>\n'
    whole = await viewer.post("/workflows/counter/start/", form)
    assert whole.status_code == 403
    html = whole.content.decode()
    assert ("<h1>Not allowed</h1>" in html, SAYS in html, "/static/flowdeck/console/console.css" in html) == (
        True,
        True,
        True,
    )
    assert (await engine.executions.search("counter", None, 10, 0, None)).total == 0


async def test_a_read_only_user_may_not_signal(engine: FlowEngine, viewer: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    before = (await engine.executions.history("c-1", None)).events
    reply = await viewer.post("/executions/c-1/signal/", {"input_name": "count", "n": "4"}, **HTMX)
    assert (reply.status_code, SAYS in reply.content.decode()) == (403, True)
    assert (await engine.executions.describe("c-1")).inputs[0].delivered is False
    assert (await engine.executions.history("c-1", None)).events == before
    assert await engine.store.get_all_fields("c-1") == {}


async def test_the_forms_are_hidden_from_a_read_only_user(
    engine: FlowEngine, viewer: AsyncClient, operator: AsyncClient
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    for path in ("/executions/c-1", "/executions/c-1/inputs/"):
        seen = (await viewer.get(path)).content.decode()
        assert ("/executions/c-1/signal/" in seen, 'class="muted signal-not-allowed"' in seen) == (
            False,
            True,
        )
        shown = (await operator.get(path)).content.decode()
        assert ("/executions/c-1/signal/" in shown, "signal-not-allowed" in shown) == (True, False)
    seen = (await viewer.get("/workflows/counter/")).content.decode()
    assert ("/workflows/counter/start/" in seen, 'id="start-not-allowed"' in seen) == (False, True)
    shown = (await operator.get("/workflows/counter/")).content.decode()
    assert ("/workflows/counter/start/" in shown, "start-not-allowed" in shown) == (True, False)


async def test_the_run_permission_starts_and_signals(engine: FlowEngine, runner: AsyncClient) -> None:
    started = await runner.post("/workflows/counter/start/", {"execution_id": "r-1"}, **HTMX)
    assert started.status_code == 200
    assert 'href="/executions/r-1"' in started.content.decode()
    signalled = await runner.post("/executions/r-1/signal/", {"input_name": "count", "n": "3"}, **HTMX)
    assert signalled.status_code == 200
    assert (await engine.store.get_all_fields("r-1"))["count"].decode() == {"n": 3, "note": ""}
    refused = await runner.post("/executions/r-1/cancel/", {"reason": "no"}, **HTMX)
    assert refused.status_code == 403
    assert (await engine.executions.describe("r-1")).cancel_requested is False


def test_the_demo_admin_holds_every_permission() -> None:
    demo.ensure_admin()
    admin = get_user_model().objects.get(username=demo.DEMO_USER)
    assert (
        admin.is_superuser,
        admin.has_perm("flowdeck_console.run_executions"),
        admin.has_perm("flowdeck_console.operate_executions"),
    ) == (
        True,
        True,
        True,
    )


async def test_the_account_page_shows_ones_own_tokens_without_secrets(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    users = get_user_model()
    victor = await users.objects.aget(username="victor")
    mine = await sync_to_async(create_token)(victor, "laptop")
    other = await sync_to_async(create_token)(await users.objects.acreate(username="olga"), "theirs")
    await ApiToken.objects.filter(name="laptop").aupdate(revoked=timezone.now())
    await sync_to_async(create_token)(victor, "ci", timezone.now() + timedelta(days=3))

    html = (await viewer.get("/account/")).content.decode()

    rows = re.findall(r'<tr data-token-id="\d+"><td>\d+</td><td>([^<]+)</td>.*?<td>(active|revoked)', html)
    assert rows == [("ci", "active"), ("laptop", "revoked")]
    assert ("theirs" in html, mine in html, other in html, mine.removeprefix("fd_") in html) == (
        False,
        False,
        False,
        False,
    )
    assert html.count("not held") == 2
    assert 'href="/account/">victor</a>' in html
    anonymous = await AsyncClient().get("/account/")
    assert (anonymous.status_code, anonymous["Location"].split("?")[0]) == (302, "/login/")
