"""Schedules over the REST API: create, show, list, pause, resume, trigger, backfill (dry run, then go),
delete; bad definitions are 400s with JSON naming the part and record nothing in the store; a viewer may
read and dry-run but not change; every change is in the activity log with who made it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.console.models import Activity, create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import _user, engine

__all__ = ["engine"]

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]

NIGHTLY = {
    "name": "nightly",
    "workflowId": "counter",
    "cron": "0 3 * * *",
    "timezone": "Europe/Paris",
    "inputs": {"count": {"n": 2}},
}


async def _headers(name: str, operator: bool) -> dict[str, Any]:
    token = await sync_to_async(lambda: create_token(_user(name, operator), "t"))()
    return {"headers": {"Authorization": f"Bearer {token}"}, "content_type": "application/json"}


@pytest.fixture
async def olga(engine: FlowEngine) -> dict[str, Any]:
    return await _headers("olga", True)


async def _call(auth: dict[str, Any], method: str, path: str, body: Any = None) -> tuple[int, Any]:
    client = AsyncClient()
    data = "" if body is None else json.dumps(body)
    answer = await getattr(client, method)("/api/v1" + path, data, **auth)
    return answer.status_code, answer.json()


async def test_the_whole_life_of_a_schedule(olga: dict[str, Any]) -> None:
    status, made = await _call(olga, "post", "/schedules", NIGHTLY)
    assert status == 200, made
    assert (made["name"], made["paused"], made["declared"], made["lastRuns"]) == ("nightly", False, False, [])
    assert [run[11:16] for run in made["nextRuns"][:1]] in (["02:00"], ["01:00"])  # 03:00 Paris in UTC
    assert (await _call(olga, "post", "/schedules", NIGHTLY))[0] == 409
    status, paused = await _call(olga, "post", "/schedules/nightly/pause")
    assert (status, paused["paused"], paused["nextRuns"]) == (200, True, [])
    status, resumed = await _call(olga, "post", "/schedules/nightly/resume")
    assert (status, resumed["paused"], len(resumed["nextRuns"])) == (200, False, 5)
    status, triggered = await _call(olga, "post", "/schedules/nightly/trigger")
    assert status == 200
    assert triggered["executionId"].startswith("sched:nightly:")
    window = {"start": "2026-11-01T00:00:00Z", "end": "2026-11-03T23:00:00Z"}
    status, dry = await _call(olga, "post", "/schedules/nightly/backfill", window)
    assert (status, dry["dryRun"], dry["ticks"], dry["started"]) == (
        200,
        True,
        ["2026-11-01T02:00:00Z", "2026-11-02T02:00:00Z", "2026-11-03T02:00:00Z"],
        [],
    )
    status, done = await _call(olga, "post", "/schedules/nightly/backfill", {**window, "dryRun": False})
    assert (status, done["started"]) == (200, dry["executionIds"])
    status, shown = await _call(olga, "get", "/schedules/nightly")
    assert [(run["source"], run["state"]) for run in shown["lastRuns"]][:1] == [("trigger", "running")]
    assert len(shown["lastRuns"]) == 4
    assert [s["name"] for s in (await _call(olga, "get", "/schedules"))[1]] == ["nightly"]
    assert (await _call(olga, "delete", "/schedules/nightly")) == (200, {"ok": True})
    assert (await _call(olga, "get", "/schedules/nightly"))[0] == 404
    store = runtime.store()
    assert await store.get_execution(done["started"][0]) is not None  # its executions stay
    actions = await sync_to_async(
        lambda: list(
            Activity.objects.filter(detail__schedule="nightly").values_list("actor", "action", "outcome")
        )
    )()
    assert sorted(actions) == sorted(
        ("olga", a, o)
        for a, o in [
            ("schedule:create", "accepted"),
            ("schedule:create", "refused"),
            ("schedule:pause", "accepted"),
            ("schedule:resume", "accepted"),
            ("schedule:trigger", "accepted"),
            ("schedule:backfill:dry-run", "accepted"),
            ("schedule:backfill", "accepted"),
            ("schedule:delete", "accepted"),
        ]
    )


BAD = [
    pytest.param({"timezone": "Europe/Parid"}, "timezone", id="unknown-zone"),
    pytest.param({"cron": "0 25 * * *"}, "cron", id="bad-cron"),
    pytest.param({"cron": None}, "cron", id="neither-cron-nor-every"),
    pytest.param({"everySeconds": 60}, "cron", id="both"),
    pytest.param({"workflowId": "nope"}, "workflow_id", id="unknown-workflow"),
    pytest.param({"inputs": {"count": "two"}}, "inputs", id="inputs-refused"),
    pytest.param({"inputs": {"other": 1}}, "inputs", id="undeclared-input"),
    pytest.param({"name": "a:b"}, "name", id="bad-name"),
]


@pytest.mark.parametrize(("change", "field"), BAD)
async def test_a_bad_definition_is_a_400_naming_the_part(
    olga: dict[str, Any], change: Any, field: str
) -> None:
    status, body = await _call(olga, "post", "/schedules", {**NIGHTLY, **change})
    assert (status, body["code"], body["detail"]["field"]) == (400, "invalid_schedule", field), body
    assert await runtime.store().list_schedules() == []


async def test_malformed_bodies_and_unknown_names(olga: dict[str, Any]) -> None:
    status, body = await _call(olga, "post", "/schedules", {**NIGHTLY, "overlap": "sometimes"})
    assert status == 400
    assert body["code"]
    for method, path in [
        ("post", "/schedules/nope/pause"),
        ("post", "/schedules/nope/trigger"),
        ("delete", "/schedules/nope"),
    ]:
        status, body = await _call(olga, method, path)
        assert (status, body["code"]) == (404, "schedule_not_found")
    await _call(olga, "post", "/schedules", NIGHTLY)
    status, body = await _call(
        olga,
        "post",
        "/schedules/nightly/backfill",
        {"start": "2026-01-01T00:00:00Z", "end": "2030-01-01T00:00:00Z"},
    )
    assert (status, body["code"]) == (400, "invalid_schedule")
    status, body = await _call(
        olga, "post", "/schedules/nightly/backfill", {"start": "yesterday", "end": "2030-01-01T00:00:00Z"}
    )
    assert status == 400


async def test_a_viewer_reads_and_dry_runs_but_changes_nothing(olga: dict[str, Any]) -> None:
    await _call(olga, "post", "/schedules", NIGHTLY)
    victor = await _headers("victor", False)
    assert (await _call(victor, "get", "/schedules/nightly"))[0] == 200
    window = {"start": "2026-11-01T00:00:00Z", "end": "2026-11-02T00:00:00Z"}
    assert (await _call(victor, "post", "/schedules/nightly/backfill", window))[0] == 200
    for method, path, body in [
        ("post", "/schedules", {**NIGHTLY, "name": "other"}),
        ("post", "/schedules/nightly/pause", None),
        ("post", "/schedules/nightly/trigger", None),
        ("delete", "/schedules/nightly", None),
        ("post", "/schedules/nightly/backfill", {**window, "dryRun": False}),
    ]:
        assert (await _call(victor, method, path, body))[0] == 403
    found = await runtime.store().get_schedule("nightly")
    assert found is not None
    assert found.paused is False
