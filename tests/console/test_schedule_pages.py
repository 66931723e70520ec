"""The Schedules pages: the list and a schedule's page show what the store holds (next runs in the
schedule's zone, last runs linking to their executions, paused or not, its activity); every action is a
POST with CSRF, needs the operator permission, records who did it, and a bad definition or range answers
the page again (400) with nothing recorded in the store."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.console.models import Activity
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import _user, engine, operator, viewer

__all__ = ["engine", "operator", "viewer"]

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]

FORM = {
    "name": "nightly",
    "workflow_id": "counter",
    "cron": "0 3 * * *",
    "timezone": "Europe/Paris",
    "inputs": '{"count": {"n": 1}}',
    "overlap": "skip",
    "catchup": "latest",
}


async def _text(client: AsyncClient, path: str) -> tuple[int, str]:
    answer = await client.get(path)
    return answer.status_code, answer.content.decode()


async def test_create_then_operate_from_the_pages(operator: AsyncClient) -> None:
    answer = await operator.post("/schedules/new/", FORM)
    assert (answer.status_code, answer["Location"]) == (302, "/schedules/nightly/?done=created")
    status, listing = await _text(operator, "/schedules/")
    assert status == 200
    assert 'href="/schedules/nightly/"' in listing
    assert "Europe/Paris" in listing
    assert ">active<" in listing
    assert " 03:00<" in listing  # the next run, in Paris time
    assert (await operator.post("/schedules/nightly/pause/")).status_code == 302
    status, page = await _text(operator, "/schedules/nightly/?done=paused")
    assert ">paused<" in page
    assert "None while paused." in page
    assert "Schedule paused" in page
    await operator.post("/schedules/nightly/resume/")
    await operator.post("/schedules/nightly/trigger/")
    status, page = await _text(operator, "/schedules/nightly/")
    [tick] = await runtime.store().list_ticks("nightly")
    assert f'href="/executions/{tick.execution_id}"' in page
    assert "trigger" in page
    status, dry = await _text(
        operator, "/schedules/nightly/backfill/?start=2026-11-01T00:00Z&end=2026-11-02T12:00Z"
    )
    assert status == 200
    assert "<b>2</b> ticks in this range." in dry
    assert "Start these 2" in dry
    assert len(await runtime.store().list_ticks("nightly")) == 1  # the dry run started nothing
    go = await operator.post(
        "/schedules/nightly/backfill/", {"start": "2026-11-01T00:00Z", "end": "2026-11-02T12:00Z"}
    )
    assert go.status_code == 302
    assert len(await runtime.store().list_ticks("nightly")) == 3
    status, page = await _text(operator, "/schedules/nightly/")
    for action in (
        "schedule:create",
        "schedule:pause",
        "schedule:resume",
        "schedule:trigger",
        "schedule:backfill",
    ):
        assert f"<code>{action}</code>" in page
    assert ">olga<" in page
    assert (await operator.post("/schedules/nightly/delete/"))["Location"] == "/schedules/"
    assert (await operator.get("/schedules/nightly/")).status_code == 404
    assert await runtime.store().get_execution(tick.execution_id) is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"cron": "0 3 * *"}, "invalid cron expression"),
        ({"inputs": '{"count": 3}'}, "inputs refused"),
        ({"inputs": "{"}, "inputs are not valid JSON"),
        ({"workflow_id": "nope"}, "nope"),
        ({"name": "<b>x:y</b>"}, "&lt;b&gt;x:y&lt;/b&gt;"),
    ],
)
async def test_a_bad_definition_answers_the_page_again(
    operator: AsyncClient, change: Any, message: str
) -> None:
    answer = await operator.post("/schedules/new/", {**FORM, **change})
    page = answer.content.decode()
    assert answer.status_code == 400
    assert message in page
    assert 'id="schedule-problem"' in page
    assert await runtime.store().list_schedules() == []


async def test_a_viewer_sees_no_actions_and_is_refused_them(
    operator: AsyncClient, viewer: AsyncClient
) -> None:
    await operator.post("/schedules/new/", FORM)
    status, page = await _text(viewer, "/schedules/nightly/")
    assert status == 200
    assert "Trigger now" not in page
    assert "New schedule" not in (await _text(viewer, "/schedules/"))[1]
    for path in ("/schedules/nightly/pause/", "/schedules/nightly/trigger/", "/schedules/nightly/delete/"):
        assert (await viewer.post(path)).status_code == 403
    assert (await viewer.post("/schedules/new/", {**FORM, "name": "x"})).status_code == 403
    found = await runtime.store().get_schedule("nightly")
    assert found is not None
    assert found.paused is False


async def test_actions_need_the_csrf_token(engine: FlowEngine) -> None:
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    assert (await client.post("/schedules/new/", FORM)).status_code == 403
    assert await runtime.store().list_schedules() == []
    assert not await sync_to_async(Activity.objects.exists)()
