"""An operator's action shows its result at once (issue 29): an answered stop reads "answered, awaiting
resume" on the execution page, the list, REST and the CLI; the resume preview warns when the version to
resume on is the one an unanswered F0001 stopped under, and the bulk dry run classes such executions apart;
the bulk End tab counts what it can end; an ended execution drops its pending-cancel line and paints what
it cut short interrupted; the node panel works on a parked execution. In process, on the real store."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.engine.engine import FlowEngine
from tests.console.seed_overview import seed_execution
from tests.console.test_bulk import _close_thread_connections, served, started_under
from tests.console.test_views import _user
from tests.console.versioned_flows import V0

__all__ = ["_close_thread_connections", "served"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
async def engine(served: None) -> FlowEngine:
    return await runtime.engine()


@pytest.fixture
async def olga(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    return client


async def _html(client: AsyncClient, path: str) -> str:
    reply = await client.get(path)
    assert reply.status_code == 200, (path, reply.status_code)
    return reply.content.decode()


def _cli(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def _status_text(page: str) -> str:
    found = re.search(r'<dd id="status-text">([^<]*)</dd>', page)
    assert found is not None
    return found[1]


async def _node_status(client: AsyncClient, eid: str, path: str) -> str:
    reply = await client.get(f"/api/v1/executions/{eid}/diagram?format=json")
    assert reply.status_code == 200, reply.content
    [status] = [n["status"] for n in json.loads(reply.content)["nodes"] if n.get("path") == path]
    return str(status)


async def test_an_answered_stop_reads_answered_awaiting_resume_everywhere(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await seed_execution(engine.store, "c-stop", "stopped", "F0001")
    assert _status_text(await _html(olga, "/executions/c-stop")) == "stopped:F0001"
    reply = await olga.post("/executions/c-stop/answer/", {"node": "double", "value": "4"})
    assert reply.status_code == 200, reply.content
    page = await _html(olga, "/executions/c-stop")
    assert _status_text(page) == "stopped·answered:F0001"
    assert (
        '<div class="problem answered" id="stop-answered"><strong>Answered, awaiting resume.</strong>' in page
    )
    assert "olga answered it at" in page
    assert "<strong>Stopped F0001</strong>" not in page
    listed = await _html(olga, "/executions/?workflow=counter")
    row = re.search(r'<tr data-execution-id="c-stop".*?</tr>', listed, re.S)
    assert row is not None
    assert '<span class="badge st-answered" data-status="stopped"' in row[0]
    assert ">stopped·answered</span>" in row[0]
    assert "answered, awaiting resume — F0001 stuck" in row[0]
    rest = json.loads((await olga.get("/api/v1/executions/c-stop")).content)
    assert (rest["state"], rest["stateText"], rest["stop"]["answered"]) == (
        "stopped",
        "stopped·answered:F0001",
        True,
    )
    assert await _node_status(olga, "c-stop", "double") == "answered"
    listed_cli = await sync_to_async(_cli, thread_sensitive=False)("ls", "--workflow", "counter", "--json")
    assert [(i["state"], i["state_text"]) for i in listed_cli["items"]] == [
        ("stopped", "stopped·answered:F0001")
    ]


async def test_the_resume_preview_warns_when_the_same_mistake_would_stop_it_again(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await seed_execution(engine.store, "c-bug", "stopped", "F0001")
    await seed_execution(engine.store, "c-world", "stopped", "F0003")  # the world may answer next time
    preview = (await olga.post("/executions/c-bug/resume/")).content.decode()
    assert 'id="resume-warning"' in preview
    assert "the same mistake will stop it again: F0001 at double (stuck)" in preview
    assert ">Go: resume it anyway</button>" in preview
    clean = (await olga.post("/executions/c-world/resume/")).content.decode()
    assert "resume-warning" not in clean
    assert ">Go: resume it</button>" in clean
    form = {"workflow": "counter", "status": "stopped", "action": "resume", "confirmed": "2"}
    reply = await olga.post("/executions/bulk/run/", form)
    assert reply.status_code == 303
    summary = await _html(olga, reply["Location"])
    again = re.search(r'<tr class="sum-stops_again">(.*?)</tr>', summary, re.S)
    cleanly = re.search(r'<tr class="sum-clean">(.*?)</tr>', summary, re.S)
    assert again is not None
    assert cleanly is not None
    assert "would stop again at once" in again[1]
    assert ("c-bug" in again[1], "c-world" in again[1]) == (True, False)
    assert ("c-bug" in cleanly[1], "c-world" in cleanly[1]) == (False, True)
    assert "Resume the 1 clean execution" in summary
    await engine.answer("c-bug", "double", 4, actor="olga")  # a person did its work: nothing repeats
    answered = (await olga.post("/executions/c-bug/resume/")).content.decode()
    assert "resume-warning" not in answered


async def test_the_end_tab_counts_only_the_stopped_executions(engine: FlowEngine, olga: AsyncClient) -> None:
    await seed_execution(engine.store, "e-stop", "stopped", "F0004")
    for eid in ("e-wait-1", "e-wait-2"):
        await seed_execution(engine.store, eid, "waiting")
    page = await _html(olga, "/executions/bulk/?workflow=counter&action=end")
    assert "<b>3</b> executions" in page
    assert '<dd id="bulk-endable"><b>1</b> of them stopped' in page
    assert 'name="confirmed" value="1"' in page
    assert ">End 1 execution</button>" in page
    waiting = await _html(olga, "/executions/bulk/?workflow=counter&status=waiting&action=end")
    assert "None of the 2 is stopped: there is nothing to end." in waiting
    assert 'id="bulk-form"' not in waiting
    form = {"workflow": "counter", "action": "end", "confirmed": "1", "reason": "shipped by hand"}
    reply = await olga.post("/executions/bulk/run/", form)
    assert reply.status_code == 303
    ended = [(await engine.store.get_execution(e)) for e in ("e-stop", "e-wait-1", "e-wait-2")]
    assert [s.status.show() if s else None for s in ended] == ["failed:shipped by hand", "running", "running"]


async def test_an_ended_execution_drops_its_cancel_line_and_paints_what_it_cut_short(
    engine: FlowEngine, olga: AsyncClient
) -> None:
    await seed_execution(engine.store, "c-wait", "waiting")
    await engine.executions.cancel("c-wait", "not wanted", actor="olga")  # no worker hears it
    assert '<dt>Cancel</dt><dd class="warn">requested: not wanted</dd>' in await _html(
        olga, "/executions/c-wait"
    )
    await engine.end("c-wait", "put right by hand", actor="olga")
    page = await _html(olga, "/executions/c-wait")
    assert "<dt>Cancel</dt>" not in page
    assert await _node_status(olga, "c-wait", "count") == "interrupted"
    mermaid = await _html(olga, "/executions/c-wait/diagram/mermaid/")
    assert "fill:#C9B3A6" in mermaid


async def test_the_node_panel_works_on_a_parked_execution(engine: FlowEngine, olga: AsyncClient) -> None:
    await started_under(V0, "p-1")
    runtime.reset()
    await runtime.engine()
    page = await _html(olga, "/executions/p-1")
    assert 'data-graph-url="/api/v1/executions/p-1/diagram?format=json"' in page
    assert await _node_status(olga, "p-1", "go") == "pending"  # drawn from the stored version: nothing runs
    panel = await olga.get("/executions/p-1/nodes/go")
    assert panel.status_code == 200, panel.content
    assert "not served" not in panel.content.decode()
    assert (
        '<div class="node-panel-body" data-node-key="go" data-node-status="pending">'
        in panel.content.decode()
    )
