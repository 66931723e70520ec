"""The console's pages in-process (Django's async test client, the default test database): login, CSRF,
the operator permission, the signal form's server-side validation, and escaping of user text."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from tests.console.flows import HOSTILE_NAME
from tests.console.seed_overview import seed_execution

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
async def engine() -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()


def _user(name: str, operator: bool, run: bool | None = None) -> Any:
    """A user; an operator also holds the run permission (as the migration grants), unless `run` says."""
    user = get_user_model().objects.create_user(name, password="x")
    codenames = ["operate_executions"] if operator else []
    if operator if run is None else run:
        codenames.append("run_executions")
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
async def operator(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    return client


@pytest.fixture
async def viewer(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("victor", False))
    return client


PAGES = ("/executions/", "/executions/e1", "/workflows/", "/workflows/counter/", "/parked/", "/health/")


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_needs_a_login(engine: FlowEngine, path: str) -> None:
    reply = await AsyncClient().get(path)
    assert (reply.status_code, reply["Location"].split("?")[0]) == (302, "/login/")


async def test_the_executions_list_filters_and_counts(engine: FlowEngine, operator: AsyncClient) -> None:
    for eid in ("c-1", "c-2"):
        await engine.workflows.start("counter", execution_id=eid)
    await engine.workflows.start("slow_undo", execution_id="s-1")
    page = (await operator.get("/executions/?workflow=counter")).content.decode()
    assert re.findall(r'data-execution-id="([^"]+)"', page) == ["c-2", "c-1"]
    assert "1–2 of 2" in page
    rows = (await operator.get("/executions/?workflow=slow_undo&partial=rows")).content.decode()
    assert "<html" not in rows
    assert re.findall(r'data-execution-id="([^"]+)"', rows) == ["s-1"]
    refused = (await operator.get("/executions/?status=sideways")).content.decode()
    assert "sideways" in refused
    assert "0 of 0" in refused
    choices = (await operator.get("/executions/")).content.decode()
    assert '<option value="waiting:count"' in choices


async def test_the_executions_list_searches_by_a_recorded_value(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    for eid, n in (("c-1", 2), ("c-2", 3), ("c-3", 3)):
        await engine.workflows.start("counter", execution_id=eid, inputs={"count": {"n": n}})

    async def listed(q: str) -> tuple[list[str], str]:
        reply = await operator.get("/executions/", {"q": q})
        assert reply.status_code == 200
        page = reply.content.decode()
        return re.findall(r'data-execution-id="([^"]+)"', page), page

    assert (await listed("field:count.n=3"))[0] == ["c-3", "c-2"]
    assert "1–2 of 2" in (await listed("field:count.n=3"))[1]
    assert (await listed("c-3 field:count.n=3"))[0] == ["c-3"]
    assert (await listed('field:count.n="3"'))[0] == []
    rows, page = await listed("field:count.n")
    assert rows == []
    assert "has no &#x27;=&lt;value&gt;&#x27; after its path" in page
    assert 'id="search-help"' in page
    rows, page = await listed("c-1 c-2")
    assert "search for one id prefix" in page


async def test_the_executions_list_names_a_path_the_workflow_cannot_record(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    """Issue 29: with the workflow chosen, a path its input types cannot hold is a message beside the table
    naming it and the nearest path, not "no execution matches"; the new forms search as the box says."""
    for eid, n in (("c-1", 2), ("c-2", 3), ("c-3", 4)):
        await engine.workflows.start("counter", execution_id=eid, inputs={"count": {"n": n}})

    async def listed(q: str) -> tuple[list[str], str]:
        reply = await operator.get("/executions/", {"workflow": "counter", "q": q})
        assert reply.status_code == 200
        page = reply.content.decode()
        return re.findall(r'data-execution-id="([^"]+)"', page), page

    rows, page = await listed("field:count.m=3")
    assert rows == []
    assert '<p class="message error">' in page
    assert "records no path count.m (nearest: count.n" in page
    assert "No execution matches" not in page  # nothing was searched: the table does not say none matched
    assert "Nothing was searched" in page
    rows, page = await listed("field:cuont.n=3")
    assert "records no path cuont.n (nearest: count" in page
    assert (await listed("field:count.n>=3"))[0] == ["c-3", "c-2"]
    assert (await listed("field:count.n<3"))[0] == ["c-1"]


async def test_a_viewer_cannot_cancel(engine: FlowEngine, viewer: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    reply = await viewer.post("/executions/c-1/cancel/", {"reason": "no"})
    assert reply.status_code == 403
    assert (await engine.executions.describe("c-1")).cancel_requested is False
    bulk = await viewer.post("/executions/cancel/", {"ids": ["c-1"], "reason": "no"})
    assert bulk.status_code == 403


async def test_an_operator_cancel_records_the_user(engine: FlowEngine, operator: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    reply = await operator.post("/executions/c-1/cancel/", {"reason": "customer <b>asked</b>"})
    assert reply.status_code == 200
    events = (await engine.executions.history("c-1", None)).events
    asked = [e for e in events if e.kind.value == "CancelRequested"]
    assert [(e.data.get("actor"), e.data.get("reason")) for e in asked] == [("olga", "customer <b>asked</b>")]
    panel = (await operator.get("/executions/c-1/panel/")).content.decode()
    assert "customer &lt;b&gt;asked&lt;/b&gt;" in panel


async def test_forms_need_the_csrf_token(engine: FlowEngine) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    reply = await client.post("/executions/c-1/cancel/", {"reason": "x"})
    assert reply.status_code == 403
    assert (await engine.executions.describe("c-1")).cancel_requested is False


async def test_signal_errors_sit_next_to_their_field(engine: FlowEngine, operator: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    page = (await operator.get("/executions/c-1")).content.decode()
    assert 'name="n"' in page
    assert 'name="note"' in page
    bad = await operator.post("/executions/c-1/signal/", {"input_name": "count", "n": "0"})
    assert bad.status_code == 400
    errors = re.findall(r'data-error-for="([^"]+)">([^<]+)<', bad.content.decode())
    assert errors == [("n", "Input should be greater than or equal to 1")]
    typo = await operator.post("/executions/c-1/signal/", {"input_name": "count", "n": "two"})
    assert re.findall(r'data-error-for="([^"]+)">([^<]+)<', typo.content.decode()) == [
        ("n", "enter a whole number")
    ]
    assert (await engine.executions.describe("c-1")).inputs[0].delivered is False
    good = await operator.post("/executions/c-1/signal/", {"input_name": "count", "n": "4", "note": "hi"})
    assert good.status_code == 200
    fields = await engine.store.get_all_fields("c-1")
    assert fields["count"].decode() == {"n": 4, "note": "hi"}


async def test_a_hostile_name_is_escaped_everywhere(engine: FlowEngine, operator: AsyncClient) -> None:
    await engine.workflows.start("hostile", execution_id="h-1")
    for path in ("/executions/h-1", "/executions/h-1/inputs/", "/workflows/hostile/", "/workflows/"):
        html = (await operator.get(path)).content.decode()
        assert HOSTILE_NAME not in html, path
        assert ESCAPED in html, path
    for fmt in ("dot", "bpmn", "mermaid"):
        drawn = (await operator.get(f"/executions/h-1/diagram/{fmt}/")).content.decode()
        assert "<script" not in drawn, fmt
    workflow_svg = (await operator.get("/workflows/hostile/diagram/dot/")).content.decode()
    assert "<script" not in workflow_svg


async def test_resume_preview_is_for_all_and_go_for_operators(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    # stopped: only a stopped or parked execution has a resume to preview (a running one is refused, 409)
    await seed_execution(engine.store, "c-1", "stopped", "F0001")
    preview = await viewer.post("/executions/c-1/resume/", {})
    html = preview.content.decode()
    assert preview.status_code == 200
    assert "Resume preview" in html
    assert "resume-go" not in html  # no Go button without the permission
    go = await viewer.post("/executions/c-1/resume/", {"go": "1"})
    assert go.status_code == 403
    ended = await viewer.post("/executions/c-1/end/", {"reason": "done by hand"})
    assert ended.status_code == 403
    assert (await engine.executions.describe("c-1")).status.show().startswith("stopped")


async def test_parked_executions_move_to_the_newest_version(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    from examples.fulfilment import flows
    from flowdeck.console import demo

    await demo.seed_parked(engine.store)
    newest = await engine.register("fulfilment", flows.fulfilment)
    page = (await operator.get("/parked/")).content.decode()
    assert "demo-parked" in page
    assert "1 parked" in page
    old = (await engine.executions.describe("demo-parked")).state.hash
    preview = await operator.post(f"/parked/fulfilment/{old}/resume/", {})
    assert preview.status_code == 200
    assert "demo-parked" in preview.content.decode()
    assert (await engine.executions.describe("demo-parked")).state.hash == old  # a preview writes nothing
    go = await operator.post(f"/parked/fulfilment/{old}/resume/", {"go": "1"})
    assert go.status_code == 200
    assert (await engine.executions.describe("demo-parked")).state.hash == newest
    assert "demo-parked" not in (await operator.get("/parked/")).content.decode()


async def test_cancel_a_selection_with_one_reason(engine: FlowEngine, operator: AsyncClient) -> None:
    for eid in ("c-1", "c-2", "c-3"):
        await engine.workflows.start("counter", execution_id=eid)
    reply = await operator.post("/executions/cancel/", {"ids": ["c-1", "c-3"], "reason": "batch"})
    html = reply.content.decode()
    assert reply.status_code == 200
    assert re.findall(r"<code>([^<]+)</code>: ([^<]+)<", html) == [
        ("c-1", "cancel requested"),
        ("c-3", "cancel requested"),
    ]
    asked = {eid: (await engine.executions.describe(eid)).cancel_requested for eid in ("c-1", "c-2", "c-3")}
    assert asked == {"c-1": True, "c-2": False, "c-3": True}


async def test_history_pages_from_an_offset(engine: FlowEngine, operator: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    await engine.executions.cancel("c-1", "one", actor="olga")
    rows = (await operator.get("/executions/c-1/history/?offset=0")).content.decode()
    assert re.findall(r'data-seq="(\d+)"', rows) == ["1", "2"]
    after = (await operator.get("/executions/c-1/history/?offset=1")).content.decode()
    assert re.findall(r'data-seq="(\d+)"', after) == ["2"]
    assert "olga" in after
