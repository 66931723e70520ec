"""Operator verbs that have nothing to act on (issue 27, items 5 and 7), in-process on the real store:

- resume takes a stopped or parked execution only: one that runs (waiting, sleeping) on a version this
  process serves is refused with 409 `not_resumable` naming its state, dry run or go, on the API, the console
  and the CLI (one line, exit 2), with no `Resumed` event written; a bulk dry run classes it apart;
- cancelling an id that names no execution is a 404 `execution_not_found` on the API (not `200
  already-terminal`), a 404 page in the console, exit 2 in the CLI, and the engine raises
  `FlowExecutionNotFound`; nothing is written for it.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.console.models import Activity, create_token
from flowdeck.engine import errors
from flowdeck.engine.engine import FlowEngine
from tests.console.test_activity import HTMX, rows
from tests.console.test_views import _user, engine, operator

__all__ = ["engine", "operator"]

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.filterwarnings("ignore:Returning tuple:DeprecationWarning"),
]


@pytest.fixture
async def api(engine: FlowEngine) -> dict[str, Any]:
    """An operator's bearer token, as keyword arguments for the async client."""
    token = await sync_to_async(lambda: create_token(_user("ada", True), "t"))()
    return {"headers": {"Authorization": f"Bearer {token}"}, "content_type": "application/json"}


async def _post(api: dict[str, Any], path: str, body: Any = None) -> tuple[int, Any]:
    reply = await AsyncClient().post("/api/v1" + path, "" if body is None else json.dumps(body), **api)
    return reply.status_code, reply.json()


async def _kinds(engine: FlowEngine, eid: str) -> list[str]:
    return [e.kind.value for e in (await engine.executions.history(eid, None)).events]


def _flow(*args: str) -> str:
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


# ------------------------------------------------------------------------------------ resume (item 5)


async def test_the_api_refuses_to_resume_a_running_execution_and_writes_nothing(
    engine: FlowEngine, api: dict[str, Any]
) -> None:
    await engine.workflows.start("counter", execution_id="w-1")
    before = await _kinds(engine, "w-1")
    hash_before = (await engine.store.get_execution("w-1")).hash
    for body in ({"go": True}, None):
        status, refused = await _post(api, "/executions/w-1/resume", body)
        assert (status, refused["code"], refused["detail"]) == (
            409,
            "not_resumable",
            {"execution_id": "w-1", "status": "running"},
        )
        assert "neither stopped nor parked" in refused["error"]
    assert await _kinds(engine, "w-1") == before  # no Resumed event
    assert (await engine.store.get_execution("w-1")).hash == hash_before
    recorded = sorted((r[2], r[4], r[5]) for r in await rows() if r[2].startswith("resume"))
    assert recorded == [
        ("resume:dry-run", "refused", "not_resumable"),
        ("resume:go", "refused", "not_resumable"),
    ]


async def test_the_engine_refuses_with_a_typed_error(engine: FlowEngine) -> None:
    await engine.workflows.start("counter", execution_id="w-2")
    with pytest.raises(errors.FlowNotResumable) as refused:
        await engine.resume("w-2", go=True, actor="t")
    assert (refused.value.execution_id, refused.value.status) == ("w-2", "running")


async def test_the_console_refuses_to_resume_a_running_execution(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    await engine.workflows.start("counter", execution_id="w-3")
    before = await _kinds(engine, "w-3")
    reply = await operator.post("/executions/w-3/resume/", {"go": "1"}, **HTMX)
    assert reply.status_code == 409
    assert "neither stopped nor parked" in reply.content.decode()
    assert await _kinds(engine, "w-3") == before


def test_the_cli_refuses_to_resume_a_running_execution_in_one_line(engine: FlowEngine) -> None:
    _flow("start", "counter", "--id", "w-4")
    runtime.reset()
    with pytest.raises(CommandError) as refused:
        _flow("resume", "w-4", "--go")
    assert refused.value.returncode == 2
    assert "\n" not in str(refused.value)
    assert "neither stopped nor parked" in str(refused.value)


async def test_a_bulk_dry_run_classes_running_executions_apart(
    engine: FlowEngine, api: dict[str, Any]
) -> None:
    for eid in ("w-5", "w-6"):
        await engine.workflows.start("counter", execution_id=eid)
    status, dry = await _post(api, "/executions/bulk", {"action": "resume", "idPrefix": "w-"})
    # the two may share a creation instant (newest first is then either order): the classes are the point
    summary = {group: sorted(ids) for group, ids in dry["summary"].items()}
    assert (status, summary) == (
        200,
        {
            "clean": [],
            "stops_again": [],
            "F0101": [],
            "F0102": [],
            "not_resumable": ["w-5", "w-6"],
            "other": [],
        },
    )
    assert dry["codes"] == {"w-5": "not_resumable", "w-6": "not_resumable"}


# ------------------------------------------------------------------------------- cancel unknown (item 7)


async def test_the_api_answers_404_for_cancelling_an_unknown_execution(api: dict[str, Any]) -> None:
    status, body = await _post(api, "/executions/never-existed/cancel", {"reason": "x"})
    assert (status, body["code"], body["detail"]) == (
        404,
        "execution_not_found",
        {"execution_id": "never-existed"},
    )
    row = await Activity.objects.aget(action="cancel")
    assert (row.outcome, row.code) == ("invalid", "execution_not_found")


async def test_the_engine_raises_not_found_and_writes_nothing(engine: FlowEngine) -> None:
    with pytest.raises(errors.FlowExecutionNotFound):
        await engine.executions.cancel("never-existed", "x", actor="t")
    assert await engine.store.get_execution("never-existed") is None
    assert await _kinds(engine, "never-existed") == []


async def test_the_console_answers_404_for_an_unknown_execution(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    assert (await operator.post("/executions/never-existed/cancel/", {"reason": "x"})).status_code == 404
    await engine.workflows.start("counter", execution_id="c-1")
    reply = await operator.post("/executions/cancel/", {"ids": ["c-1", "gone-1"], "reason": "x"}, **HTMX)
    assert "no such execution" in reply.content.decode()
    row = await Activity.objects.aget(action="bulk:cancel")
    assert row.detail["outcomes"] == {"c-1": "accepted", "gone-1": "invalid"}


def test_the_cli_refuses_an_unknown_execution_in_one_line(engine: FlowEngine) -> None:
    with pytest.raises(CommandError) as refused:
        _flow("cancel", "never-existed")
    assert (refused.value.returncode, "\n" in str(refused.value)) == (2, False)
