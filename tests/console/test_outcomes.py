"""What the execution page's verbs say, in-process on executions an engine's workers really run: a resume
that stops again says so (its message follows the execution), a cancel of an ended execution says it
ended, an answer and an end say what they recorded; and the inputs offer a signal form only where a
signal could go through (not on a stopped or an ended execution, which lists no input as waiting)."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console import flows, outcome_flows
from tests.engine.engine_support import until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
async def web() -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows", "tests.console.outcome_flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()


def _operator() -> Any:
    user = get_user_model().objects.create_user("olga", password="x")
    codenames = ["operate_executions", "run_executions"]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
async def client(web: FlowEngine) -> AsyncClient:
    c = AsyncClient()
    await c.aforce_login(await sync_to_async(_operator)())
    return c


@pytest.fixture
async def workers(web: FlowEngine, client: AsyncClient) -> AsyncIterator[FlowEngine]:
    """The workers the web engine does not run, on its store; started after the login (whose session
    write must not meet a worker's open SQLite transaction)."""
    engine = FlowEngine(web.store, (), workers=1, poll_timeout=timedelta(milliseconds=200))
    for name, flow in {**flows.FLOWS, **outcome_flows.FLOWS}.items():
        await engine.register(name, flow)
    async with engine:
        yield engine


def _message(html: str) -> tuple[str, str]:
    """The (level, text) of the one message in `html`."""
    found = re.findall(r'<p class="message (ok|error)" role="status">([^<]*)</p>', html)
    assert len(found) == 1, html
    return found[0][0], html_lib.unescape(found[0][1])


def _stopped(state: spi.ExecutionState) -> bool:
    return isinstance(state.status, spi.Stopped)


async def _stops(engine: FlowEngine, eid: str) -> int:
    events = (await engine.store.get_history(eid)).events
    return sum(1 for e in events if e.kind is spi.EventKind.STOPPED)


async def test_a_resume_that_stops_again_says_so(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await workers.workflows.start("stalls")
    await until(workers.store, eid, _stopped)
    reply = await client.post(f"/executions/{eid}/resume/", {"go": "1"}, **HTMX)
    assert reply.status_code == 200
    html = reply.content.decode()
    follow = re.search(r'<div id="resumed" data-live-fragment="([^"]+)">', html)
    assert follow is not None, html
    _, said = _message(html)  # ok or error: the workers may have taken it up and stopped it already
    assert said.startswith("Resumed on version "), said
    assert "Resumed on the newest version." not in html

    state = await until(workers.store, eid, _stopped)  # after the resume: stopped again, not still
    assert await _stops(workers, eid) == 2
    again = await client.get(html_lib.unescape(follow[1]))
    assert again.status_code == 200
    assert _message(again.content.decode()) == (
        "error",
        f"Resumed on version {state.hash}, and stopped again with F0001 at check: "
        "ValueError: the rate table is empty",
    )


async def test_cancel_says_what_came_of_it(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await workers.workflows.start("counter")
    await until(workers.store, eid, lambda s: bool(s.waits) and s.executor is None)
    first = await client.post(f"/executions/{eid}/cancel/", {"reason": "r"}, **HTMX)
    assert (first.status_code, *_message(first.content.decode())) == (
        200,
        "ok",
        f"Cancel requested for {eid}: it runs its undos, then ends cancelled.",
    )
    await until(workers.store, eid)
    ended = await client.post(f"/executions/{eid}/cancel/", {"reason": "r"}, **HTMX)
    assert (ended.status_code, *_message(ended.content.decode())) == (
        409,
        "error",
        f"Not cancelled: {eid} had already ended (cancelled).",
    )


async def test_answer_and_end_say_what_they_recorded(workers: FlowEngine, client: AsyncClient) -> None:
    eid = await workers.workflows.start("stalls")
    await until(workers.store, eid, _stopped)
    answered = await client.post(f"/executions/{eid}/answer/", {"node": "check", "value": ""}, **HTMX)
    assert _message(answered.content.decode()) == (
        "ok",
        "Answer recorded for check (it did its work); resume the execution to go on.",
    )
    twice = await client.post(f"/executions/{eid}/answer/", {"node": "check", "value": ""}, **HTMX)
    assert twice.status_code == 409
    level, said = _message(twice.content.decode())
    assert (level, said.startswith("Not answered: ")) == ("error", True), said
    end = await client.post(f"/executions/{eid}/end/", {"reason": "fixed the table by hand"}, **HTMX)
    assert _message(end.content.decode()) == (
        "ok",
        f"Ended {eid} without running its undos: fixed the table by hand",
    )
    again = await client.post(f"/executions/{eid}/end/", {"reason": "again"}, **HTMX)
    assert again.status_code == 409
    level, said = _message(again.content.decode())
    assert (level, said.startswith("Not ended: ")) == ("error", True), said


async def test_no_signal_form_on_a_stopped_or_ended_execution(
    workers: FlowEngine, client: AsyncClient
) -> None:
    waiting = await workers.workflows.start("counter")
    await until(workers.store, waiting, lambda s: bool(s.waits) and s.executor is None)
    page = (await client.get(f"/executions/{waiting}")).content.decode()
    assert 'class="signal"' in page
    assert '<span class="badge st-waiting">not delivered</span>' in page

    stopped = await workers.workflows.start("stalls")
    await until(workers.store, stopped, _stopped)
    page = (await client.get(f"/executions/{stopped}/inputs/")).content.decode()
    assert 'class="signal"' not in page
    assert "Stopped: it takes no input until it is resumed." in page
    assert "st-waiting" not in page

    await client.post(f"/executions/{waiting}/cancel/", {"reason": "r"}, **HTMX)
    await until(workers.store, waiting)
    page = (await client.get(f"/executions/{waiting}/inputs/")).content.decode()
    assert 'class="signal"' not in page
    assert '<span class="badge st-pending">never delivered</span>' in page
    assert "st-waiting" not in page


async def test_a_signal_to_an_ended_execution_says_why_it_was_not_sent(
    workers: FlowEngine, client: AsyncClient
) -> None:
    eid = await workers.workflows.start("counter")
    await until(workers.store, eid, lambda s: bool(s.waits) and s.executor is None)
    await client.post(f"/executions/{eid}/cancel/", {"reason": "r"}, **HTMX)
    await until(workers.store, eid)
    reply = await client.post(f"/executions/{eid}/signal/", {"input_name": "count", "n": "3"}, **HTMX)
    assert reply.status_code == 409
    level, said = _message(reply.content.decode())
    assert (level, said.startswith("count was not sent: ")) == ("error", True), said
