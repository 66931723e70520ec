"""Old and new versions of one workflow served side by side: the engines this process builds (the web's,
and the workers' of `runtime.make_engine`) serve every declared version, so an execution started under v1
runs to its end on v1 after v2 is declared newest, and the workflow page lists each version with its
executions (a version nobody declares any more shows its unended ones as parked)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient

from flowdeck.console import discovery, live, runtime
from flowdeck.engine import Flow, schema
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console.versioned_flows import TYPED_V1, V0, V1, V2
from tests.engine.engine_support import until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

H0, H1, H2 = (schema.structural_hash(flow) for flow in (V0, V1, V2))


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`FLOWS = {"versioned": [V1, V2]}` discovered in this process (its discovered set is put back
    afterwards); the web engine, `runtime.engine()`, is built on first use."""
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    discovery.discover(["tests.console.versioned_flows"])
    runtime.reset()
    live.reset()
    yield
    live.reset()
    runtime.reset()


async def _started_under(flow: Flow, execution_id: str) -> None:
    """Start `execution_id` as a process serving only `flow` did, before the deploy."""
    earlier = FlowEngine(runtime.store())
    await earlier.register("versioned", flow)
    await earlier.workflows.start("versioned", execution_id=execution_id)


async def _run_to_the_end(web: FlowEngine, *execution_ids: str) -> list[spi.ExecutionState]:
    """Signal `go` to each, with the runtime's workers running, and answer each ended row."""
    async with runtime.make_engine(workers=1, poll_timeout=timedelta(seconds=1)):
        for eid in execution_ids:
            await web.executions.signal(eid, "go", True)
        return [await until(web.store, eid) for eid in execution_ids]


async def _ran(web: FlowEngine, execution_id: str) -> str:
    field = await web.store.get_field(execution_id, "ran")
    assert field is not None
    return field.decode()


async def test_an_execution_started_under_v1_runs_on_v1_after_v2_is_declared_newest(deployed: None) -> None:
    await _started_under(V1, "old")
    web = await runtime.engine()
    assert await web.workflows.start("versioned", execution_id="new") == "new"
    assert await web.parked("versioned") == []
    old, new = await _run_to_the_end(web, "old", "new")
    assert [(s.status, s.hash) for s in (old, new)] == [(spi.Completed(), H1), (spi.Completed(), H2)]
    assert [await _ran(web, "old"), await _ran(web, "new")] == ["v1", "v2"]


def _viewer() -> Any:
    return get_user_model().objects.create_user("victor", password="x")


def _runner() -> Any:
    user = get_user_model().objects.create_user("rita", password="x")
    user.user_permissions.add(Permission.objects.get(codename="run_executions"))
    return user


async def test_an_api_signal_is_judged_by_the_version_its_execution_runs(deployed: None) -> None:
    earlier = FlowEngine(runtime.store())
    await earlier.register("typed", TYPED_V1)
    for eid in ("t1-int", "t1-text"):
        await earlier.workflows.start("typed", execution_id=eid)
    web = await runtime.engine()
    await web.workflows.start("typed", execution_id="t2-text")
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_runner)())

    async def signal(eid: str, value: object) -> tuple[int, Any]:
        reply = await client.post(
            f"/api/v1/executions/{eid}/signal/qty", json.dumps(value), content_type="application/json"
        )
        return reply.status_code, reply.json()

    assert await signal("t1-int", 3) == (200, {"ok": True})
    assert await signal("t2-text", "3") == (200, {"ok": True})
    status, body = await signal("t1-text", "3")
    assert (status, body["code"]) == (400, "invalid_input")
    assert body["error"].startswith("value for 'qty' is not a valid int")
    assert await web.store.get_field("t1-text", "qty") is None


def _cells(row: str) -> list[str]:
    return [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


async def test_the_workflow_page_lists_each_version_with_its_executions(deployed: None) -> None:
    await _started_under(V0, "v0-a")  # a version no module declares any more
    await _started_under(V1, "v1-a")
    await _started_under(V1, "v1-b")
    web = await runtime.engine()
    await web.workflows.start("versioned", execution_id="v2-a")
    await _run_to_the_end(web, "v1-a")
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_viewer)())
    reply = await client.get("/workflows/versioned/")
    assert reply.status_code == 200
    rows = re.findall(r'<tr data-hash="([^"]+)"[^>]*>(.*?)</tr>', reply.content.decode(), re.S)
    shown = [(digest, *(_cells(row)[i] for i in (0, 1, 3, 4))) for digest, row in rows]
    assert shown == [
        (H0, H0, "not served", "1 parked", "1"),
        (H1, H1, "served", "1", "2"),
        (H2, H2, "newest new starts", "1", "1"),
    ]
