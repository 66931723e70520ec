"""The node panel's fragment (`/executions/<id>/nodes/<key>`) in-process, on executions really run by an
engine's workers: attempts with their errors and the stop's traceback, a foreach's items, a waiting input
with its schema and the signal form, a sleep's deadline, a compensated node, an unknown key, hostile text.

Each case runs with the executions on SQLite (the test database) and on PostgreSQL (the store suite's
migrated alias, as the live-feed tests do); users and sessions stay in the test database."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console import panel_flows
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401  (fixtures)
from tests.console.flows import HOSTILE_NAME
from tests.engine.engine_support import until

# "__all__": every alias, the PostgreSQL one included (added by the session fixture below)
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
async def web(backend: str) -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows", "tests.console.panel_flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()


@pytest.fixture
async def workers(web: FlowEngine, client: AsyncClient) -> AsyncIterator[FlowEngine]:
    """An engine whose workers run the executions (the web engine runs none), on the same store; started
    after the login, whose session write must not meet a worker's open SQLite transaction."""
    engine = FlowEngine(web.store, (), workers=1, poll_timeout=timedelta(milliseconds=200))
    for name, flow in {**panel_flows.FLOWS}.items():
        await engine.register(name, flow)
    from tests.console import flows

    for name, flow in flows.FLOWS.items():
        await engine.register(name, flow)
    async with engine:
        yield engine


def _user(name: str, run: bool) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    if run:
        user.user_permissions.add(*Permission.objects.filter(codename__in=["run_executions"]))
    return user


@pytest.fixture
async def client(web: FlowEngine) -> AsyncClient:
    c = AsyncClient()
    await c.aforce_login(await sync_to_async(_user)("rita", True))
    return c


async def _run(
    engine: FlowEngine, workflow: str, done: Callable[[spi.ExecutionState], bool], **inputs: Any
) -> str:
    eid = await engine.workflows.start(workflow, inputs=inputs or None)
    await until(engine.store, eid, done)
    return eid


def _waits(state: spi.ExecutionState) -> bool:
    return state.executor is None and bool(state.waits)


async def _panel(client: AsyncClient, eid: str, key: str, status: int = 200) -> str:
    reply = await client.get(f"/executions/{eid}/nodes/{quote(key, safe='')}")
    assert reply.status_code == status, reply.content[:400]
    return reply.content.decode()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


async def test_a_step_shows_its_attempts_their_errors_and_the_stops_traceback(
    workers: FlowEngine, client: AsyncClient
) -> None:
    eid = await _run(workers, "flaky", lambda s: isinstance(s.status, spi.Stopped))
    html = await _panel(client, eid, "charge")
    text = _text(html)
    assert 'data-node-status="stopped"' in html
    assert "charge the card" in text
    assert "payments" in text
    assert "external" in text
    assert "5s per attempt" in text
    assert "fixed(0s).take(2)" in text
    assert "ConnectionError" in text
    outcomes = re.findall(r'<li class="attempt outcome-([a-z-]+)" data-attempt="(\d+)"', html)
    assert outcomes == [("stopped", "3"), ("retried", "2"), ("retried", "1")]  # the latest first
    assert text.count("card network unreachable") >= 3
    assert re.search(r"<summary>traceback</summary><pre class=\"trace\">Traceback", html)


async def test_a_compensated_node_shows_its_undo(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await _run(workers, "undone", lambda s: s.status.terminal)
    reserve = _text(await _panel(client, eid, "reserve"))
    assert "Compensation" in reserve
    assert "registered" in reserve
    assert "compensated" in reserve
    assert '"sku": "piano"' in reserve.replace("&quot;", '"')
    refuse = await _panel(client, eid, "refuse")
    assert "outcome-failed" in refuse
    assert "Refused" in refuse
    assert "the order is over the limit" in refuse


async def test_a_foreach_lists_its_items_with_their_values(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await _run(workers, "fanout", lambda s: s.status.terminal)
    html = await _panel(client, eid, "items")
    rows = re.findall(
        r'<tr data-item="(\d)"><td>\d</td><td><span class="badge st-(\w+)".*?<code>([^<]*)</code>', html, re.S
    )
    assert rows == [("0", "completed", "10"), ("1", "completed", "20"), ("2", "completed", "30")]
    assert "3 of 3 items" in _text(html)


async def test_a_waiting_input_shows_its_schema_and_the_signal_form(
    workers: FlowEngine, client: AsyncClient
) -> None:
    eid = await _run(workers, "counter", _waits)
    html = await _panel(client, eid, "count")
    assert 'data-node-status="waiting"' in html
    assert "JSON schema" in html
    assert "minimum" in html.lower()
    assert f'hx-post="/executions/{eid}/signal/"' in html
    assert 'name="input_name" value="count"' in html
    assert 'id="node-f-count-n"' in html  # its own ids: the Inputs card keeps `f-count-n`
    # once delivered and done, the form is gone and the value is shown
    await workers.executions.signal(eid, "count", {"n": 2, "note": ""})
    await until(workers.store, eid)
    after = await _panel(client, eid, "count")
    assert "hx-post" not in after
    assert "delivered" in after


async def test_a_sleeping_node_shows_its_deadline_with_a_countdown(
    workers: FlowEngine, client: AsyncClient
) -> None:
    eid = await _run(workers, "napper", _waits)
    state = await workers.store.get_execution(eid)
    assert state is not None
    deadline = state.waits["nap"]
    assert isinstance(deadline, spi.WakeAt)
    html = await _panel(client, eid, "nap")
    assert 'data-node-status="sleeping"' in html
    assert "let the dust settle" in html
    assert f'<span class="countdown" data-deadline="{deadline.at.isoformat()}">' in html
    assert "1h" in _text(html)


async def test_an_unknown_key_is_a_styled_404_fragment(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await _run(workers, "fanout", lambda s: s.status.terminal)
    html = await _panel(client, eid, "nowhere<b>", status=404)
    assert "no such node" in html
    assert "nowhere&lt;b&gt;" in html
    assert "<b>" not in html
    missing = await client.get("/executions/no-such-execution/nodes/x")
    assert missing.status_code == 404


async def test_a_hostile_name_is_escaped(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await _run(workers, "hostile", _waits)
    html = await _panel(client, eid, HOSTILE_NAME)
    assert HOSTILE_NAME not in html
    assert ESCAPED in html


async def test_the_panel_needs_a_login(web: FlowEngine) -> None:
    reply = await AsyncClient().get("/executions/e1/nodes/x")
    assert reply.status_code == 302
