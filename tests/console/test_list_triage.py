"""The executions list for people who triage (issue 14, point 2): the badge vocabulary, the failure and
stop line, duration, relative times with the absolute on hover, the `parked` filter, the signalable
inputs, the order, the creation window, and saved views (per person, escaped, deleted)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient

from flowdeck.console import badges, live, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import SavedView
from flowdeck.console.views.executions import signalable_inputs
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console.seed_overview import seed_execution

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

K = spi.EventKind


@pytest.fixture
async def engine() -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()


def _user(name: str) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["operate_executions", "run_executions"])
    )
    return user


async def _client(name: str) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)(name))
    return client


@pytest.fixture
async def olga(engine: FlowEngine) -> AsyncClient:
    return await _client("olga")


def ids_of(page: str) -> list[str]:
    return re.findall(r'data-execution-id="([^"]+)"', page)


def cell_of(page: str, eid: str) -> str:
    row = re.search(rf'<tr data-execution-id="{re.escape(eid)}">(.*?)</tr>', page, re.S)
    assert row is not None, eid
    return row.group(1)


async def _parked(engine: FlowEngine, eid: str) -> None:
    """An unended `counter` execution of a version no process serves."""
    event = spi.Event(K.CREATED, "counter", eid, engine.store.now(), {})
    assert await engine.store.create_execution_if_absent(eid, "counter", "0ld-version", spi.Running(), event)


async def _world(engine: FlowEngine) -> None:
    await seed_execution(engine.store, "f-1", "failed", "PaymentDeclined")
    await seed_execution(engine.store, "s-1", "stopped", "F0004")
    await seed_execution(engine.store, "w-1", "waiting")
    await seed_execution(engine.store, "r-1", "retrying")
    await seed_execution(engine.store, "c-1", "completed")
    await _parked(engine, "p-1")


async def test_badges_read_status_then_qualifier_and_the_line_says_why(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await _world(engine)
    page = (await olga.get("/executions/")).content.decode()
    badge = {
        eid: re.search(r'data-status="([^"]+)"[^>]*>([^<]+)<', cell_of(page, eid)) for eid in ids_of(page)
    }
    said = {eid: (m.group(1), m.group(2)) for eid, m in badge.items() if m}
    assert said == {
        "f-1": ("failed", "failed"),
        "s-1": ("stopped", "stopped"),
        "w-1": ("waiting", "running·waiting"),
        "r-1": ("retrying", "running·retrying"),  # a failed attempt backing off: retrying, not asleep
        "c-1": ("completed", "completed"),
        "p-1": ("parked", "parked"),
    }
    assert (
        '<span class="status-detail" title="PaymentDeclined: boom">PaymentDeclined: boom</span>'
        in cell_of(page, "f-1")
    )
    assert '<span class="status-detail" title="F0004 stuck">F0004 stuck</span>' in cell_of(page, "s-1")
    assert "its version is served by no process" in cell_of(page, "p-1")
    assert re.search(
        r'title="until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">wakes in [23] min<', cell_of(page, "r-1")
    )


async def test_the_execution_page_and_the_overview_speak_the_same_words(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await _world(engine)
    waiting = (await olga.get("/executions/w-1")).content.decode()
    assert re.search(r'class="badge st-waiting" data-status="waiting">running·waiting<', waiting)
    parked = (await olga.get("/executions/p-1")).content.decode()
    assert re.search(r'data-status="parked"[^>]*>parked<', parked)
    failed = (await olga.get("/executions/f-1")).content.decode()
    assert re.search(r'data-status="failed"[^>]*>failed<', failed)
    assert badges.label_of("sleeping") == "running·sleeping"
    assert badges.label_of("failed") == "failed"


async def test_duration_and_relative_times_with_the_absolute_on_hover(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await seed_execution(engine.store, "c-1", "completed")
    await seed_execution(engine.store, "w-1", "waiting")
    page = (await olga.get("/executions/")).content.decode()
    ended = cell_of(page, "c-1")
    assert re.search(r'<td class="num" data-duration data-label="Duration">(&lt;1 s|\d+ s)</td>', ended)
    unended = r'<span class="muted" title="unended: created until now">(&lt;1 s|\d+ s)</span>'
    assert re.search(unended, cell_of(page, "w-1"))
    moment = r'<time datetime="([^"]+)" title="(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)" data-ago>([^<]+)</time>'
    times = re.findall(moment, ended)
    assert len(times) == 2
    assert all(said == "just now" or re.fullmatch(r"\d+ s ago", said) for _, _, said in times)


def test_durations_and_relative_times_read_in_two_units_at_most() -> None:
    from datetime import UTC, datetime

    from flowdeck.console.templatetags.console_tags import ago, span

    assert [span(timedelta(seconds=s)) for s in (0.4, 7, 192, 7500, 97200, 172800)] == [
        "<1 s",
        "7 s",
        "3 min 12 s",
        "2 h 05 min",
        "1 d 3 h",
        "2 d",
    ]
    assert span(None) == "–"
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    said = [ago(now - timedelta(seconds=s), now) for s in (0, 42, 192, 7500, -7500, 172800, 183600)]
    assert said == ["just now", "42 s ago", "3 min ago", "2 h ago", "in 2 h", "2 d ago", "2 d ago"]


async def test_the_parked_filter_lists_unended_executions_of_unserved_versions(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await _world(engine)
    page = (await olga.get("/executions/?status=parked")).content.decode()
    assert (ids_of(page), "1–1 of 1" in page) == (["p-1"], True)
    assert '<option value="parked" selected>parked</option>' in page
    assert ids_of((await olga.get("/executions/?status=parked&workflow=slow_undo")).content.decode()) == []


async def test_the_waiting_filter_offers_inputs_a_person_signals_not_subflow_inputs(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    offered = signalable_inputs()
    assert {"approval", "count", "go"} <= set(offered)
    # payment runs as fulfilment's subflow: its inputs come from the parent's mapper
    assert not {"order_id", "amount_cents", "card"} & set(offered)
    page = (await olga.get("/executions/")).content.decode()
    assert '<option value="waiting:approval" >running·waiting:approval</option>' not in page
    assert re.search(r'<option value="waiting:approval"\s*>waiting:approval</option>', page)
    assert "waiting:amount_cents" not in page


async def test_sort_by_created_or_updated(engine: FlowEngine, olga: AsyncClient) -> None:
    for eid in ("c-1", "c-2", "c-3"):
        await engine.workflows.start("counter", execution_id=eid)
    await engine.executions.signal("c-1", "count", {"n": 2})  # c-1 changes last
    created = (await olga.get("/executions/?workflow=counter")).content.decode()
    assert ids_of(created) == ["c-3", "c-2", "c-1"]
    updated = (await olga.get("/executions/?workflow=counter&sort=updated")).content.decode()
    assert ids_of(updated) == ["c-1", "c-3", "c-2"]
    assert '<th aria-sort="descending">Updated ▾</th>' in updated
    assert '<option value="updated" selected>updated</option>' in updated
    refused = await olga.get("/executions/?sort=id")
    assert (refused.status_code, "sort by one of: created, updated" in refused.content.decode()) == (
        400,
        True,
    )


async def test_the_creation_window_takes_whole_days_and_lives_in_the_url(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    today = engine.store.now().date()
    yesterday, tomorrow = today - timedelta(days=1), today + timedelta(days=1)
    assert ids_of(
        (await olga.get(f"/executions/?created_from={today}&created_to={today}")).content.decode()
    ) == ["c-1"]
    assert ids_of((await olga.get(f"/executions/?created_to={yesterday}")).content.decode()) == []
    assert ids_of((await olga.get(f"/executions/?created_from={tomorrow}")).content.decode()) == []
    page = (await olga.get(f"/executions/?created_from={today}&sort=updated&page=1")).content.decode()
    assert f'name="created_from" id="created-from" value="{today}"' in page
    assert f'data-query="?sort=updated&amp;created_from={today}"' in page
    assert (await olga.get("/executions/?created_to=9999-12-31")).status_code == 200
    refused = await olga.get("/executions/?created_from=yesterday")
    assert (refused.status_code, "a day is written YYYY-MM-DD" in refused.content.decode()) == (400, True)


async def test_saved_views_are_per_person_escaped_and_deleted(engine: FlowEngine, olga: AsyncClient) -> None:
    await seed_execution(engine.store, "f-1", "failed", "PaymentDeclined")
    hostile = '<b>fails</b> & "more"'
    made = await olga.post(
        "/executions/views/", {"name": hostile, "query": "?status=failed&page=3&sort=updated"}
    )
    assert (made.status_code, made["Location"]) == (303, "/executions/?status=failed&sort=updated")
    page = (await olga.get("/executions/")).content.decode()
    assert "&lt;b&gt;fails&lt;/b&gt; &amp; &quot;more&quot;" in page
    assert "<b>fails</b>" not in page
    assert 'href="/executions/?status=failed&amp;sort=updated" data-saved-view=' in page
    shown = (await olga.get("/executions/?status=failed&sort=updated")).content.decode()
    assert 'aria-current="true"' in shown

    again = await olga.post("/executions/views/", {"name": hostile, "query": "status=completed"})
    assert again.status_code == 303
    mine = await sync_to_async(list)(SavedView.objects.values_list("name", "query"))
    assert mine == [(hostile, "status=completed")]  # the same name replaced the view

    victor = await _client("victor")
    theirs = (await victor.get("/executions/")).content.decode()
    assert "fails" not in theirs
    assert 'id="no-saved-views"' in theirs
    view = await SavedView.objects.aget()
    assert (await victor.post(f"/executions/views/{view.pk}/delete/")).status_code == 404
    assert await SavedView.objects.acount() == 1
    gone = await olga.post(f"/executions/views/{view.pk}/delete/", {"back": "?status=failed"})
    assert (gone.status_code, gone["Location"], await SavedView.objects.acount()) == (
        303,
        "/executions/?status=failed",
        0,
    )


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"name": "", "query": ""}, "give the view a name"),
        ({"name": "x" * 81, "query": ""}, "at most 80 characters"),
        ({"name": "a\x00", "query": ""}, "must not contain a NUL"),
        ({"name": "bad", "query": "sort=id"}, "sort by one of"),
        ({"name": "bad", "query": "created_from=soon"}, "a day is written"),
        # a filter that does not parse (issue 27, item 11): the list would only ever show its error
        ({"name": "bad", "query": "status=bogus"}, "unknown status filter &#x27;bogus&#x27;"),
        ({"name": "bad", "query": "status=failed:"}, "narrows to nothing"),
        ({"name": "bad", "query": "q=field:order.customer"}, "has no &#x27;=&lt;value&gt;&#x27;"),
        ({"name": "bad", "query": "q=a+b"}, "search for one id prefix"),
        ({"name": "bad", "query": "q=field:o.n=" + "9" * 200}, "a number is at most 100 digits"),
    ],
)
async def test_a_view_that_cannot_be_saved_is_refused(
    engine: FlowEngine, olga: AsyncClient, data: dict[str, str], said: str
) -> None:
    reply = await olga.post("/executions/views/", data)
    assert (reply.status_code, said in reply.content.decode()) == (400, True)
    assert await SavedView.objects.acount() == 0


async def test_saved_views_need_a_login_and_csrf(engine: FlowEngine) -> None:
    anonymous = await AsyncClient().post("/executions/views/", {"name": "x"})
    assert (anonymous.status_code, anonymous["Location"].split("?")[0]) == (302, "/login/")
    strict = AsyncClient(enforce_csrf_checks=True)
    await strict.aforce_login(await sync_to_async(_user)("olga"))
    assert (await strict.post("/executions/views/", {"name": "x"})).status_code == 403
    assert await SavedView.objects.acount() == 0
