"""The parked page in-process (Django's async test client; SQLite by default, PostgreSQL with DATABASE_URL):
a parked version drawn from its stored graph beside the newest with the differences marked, executions
paged, each execution's progress on its own version and its resume preview (F0101 included), the old rows
that kept no graph, the stopped execution's resume report, escaping, and refusals."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connections
from django.test import AsyncClient

from flowdeck.console import discovery, live, runtime
from flowdeck.engine import Flow, schema
from flowdeck.engine.engine import FlowEngine
from tests.console.flows import HOSTILE_NAME
from tests.console.versioned_flows import V0, V2

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

H0, H2 = schema.structural_hash(V0), schema.structural_hash(V2)
# An older version still: it took an input `gone` the newest never asks for (F0101 on resume), and a step
# with a hostile name.
OLDER = (
    Flow.init("versioned")
    .input("go", bool)
    .input("gone", int)
    .step(HOSTILE_NAME, lambda ctx: None)
    .output("ran", lambda ctx: "older", type=str)
)
H_OLDER = schema.structural_hash(OLDER)


@pytest.fixture(autouse=True)
async def _close_thread_connections() -> AsyncIterator[None]:
    """Close the Django connection of the thread the async client runs the views' sync parts in, so that
    PostgreSQL's test database can be dropped at the end (the main thread's is closed by pytest-django)."""
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`FLOWS = {"versioned": [V1, V2]}` discovered in this process; V0 and OLDER are served by nobody."""
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    discovery.discover(["tests.console.versioned_flows"])
    runtime.reset()
    live.reset()
    yield
    live.reset()
    runtime.reset()


async def _started_under(flow: Flow, *execution_ids: str, inputs: dict[str, Any] | None = None) -> FlowEngine:
    """Start executions as a process serving only `flow` did, before the deploy; its engine runs nothing."""
    earlier = FlowEngine(runtime.store())
    await earlier.register("versioned", flow)
    for eid in execution_ids:
        await earlier.workflows.start("versioned", execution_id=eid, inputs=inputs)
    return earlier


def _user(name: str, operator: bool) -> Any:
    user = get_user_model().objects.create_user(name, password="x")
    if operator:
        user.user_permissions.add(
            *Permission.objects.filter(codename__in=["operate_executions", "run_executions"])
        )
    return user


async def _client(operator: bool = True) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga" if operator else "victor", operator))
    return client


def _marked(svg: str, mark: str) -> list[str]:
    """The labels (first text line) of the nodes of `svg` marked `mark`."""
    groups = re.findall(rf'<g id="[^"]+" class="node diff-{mark}">(.*?)</g>', svg, re.S)
    return [re.findall(r"<text[^>]*>([^<]*)</text>", g)[0] for g in groups]


def _figures(page: str) -> dict[str, str]:
    return dict(re.findall(r'<figure class="version version-(old|new)[^"]*"[^>]*>(.*?)</figure>', page, re.S))


async def test_the_parked_version_is_drawn_beside_the_newest_with_the_changes_marked(deployed: None) -> None:
    await _started_under(V0, "v0-a")
    await runtime.engine()  # the web engine registers V1 and V2: V2 is the newest
    page = (await (await _client()).get("/parked/")).content.decode()
    assert f"versioned @ <code>{H0}</code>" in page
    figures = _figures(page)
    assert set(figures) == {"old", "new"}
    assert "<svg" in figures["old"]
    assert "<svg" in figures["new"]
    assert H0 in figures["old"]
    assert H2 in figures["new"]
    assert _marked(figures["new"], "added") == ["checked", "noted"]
    assert _marked(figures["old"], "added") == []
    assert "0 removed" in page
    assert "2 added" in page
    changes = re.findall(r'<tr class="change-(\w+)"><td><code>([^<]*)</code>', page)
    assert changes == [("added", "checked"), ("added", "noted")]


async def test_the_executions_of_a_parked_version_are_paged(deployed: None) -> None:
    ids = [f"p-{i:02d}" for i in range(12)]
    await _started_under(V0, *ids)
    await runtime.engine()
    client = await _client()
    page = (await client.get("/parked/")).content.decode()
    assert "12 parked" in page
    assert len(re.findall(r'<tr class="parked-row"', page)) == 10
    assert f'/parked/versioned/{H0}/rows/?offset=10"' in page
    assert "(10 of 12 shown)" in page
    rest = (await client.get(f"/parked/versioned/{H0}/rows/", {"offset": "10"})).content.decode()
    shown = re.findall(r'<tr class="parked-row" data-execution="([^"]+)"', rest)
    assert len(shown) == 2
    assert "Show more" not in rest
    first = re.findall(r'<tr class="parked-row" data-execution="([^"]+)"', page)
    assert sorted(first + shown) == ids
    # Only the first row opens its preview with the page; the others on a click.
    assert page.count("click, load") == 1


async def test_an_execution_shows_its_progress_on_its_own_version_and_its_resume_preview(
    deployed: None,
) -> None:
    await _started_under(OLDER, "older-a", inputs={"gone": 3})
    web = await runtime.engine()
    assert [s.execution_id for s in await web.parked("versioned")] == ["older-a"]
    client = await _client()
    reply = await client.get("/executions/older-a/parked/")
    assert reply.status_code == 200
    part = reply.content.decode()
    assert H_OLDER in part
    svg = part[part.index("<svg") : part.index("</svg>")]
    assert "gone" in svg
    assert "completed" in svg  # `gone` was seeded: painted done on the version that declared it
    assert "waiting" in svg or "pending" in svg
    assert "F0101" in part
    assert "<code>gone</code>" in part or "gone" in part.split("F0101", 1)[1]
    assert "Go: resume it" not in part  # a conflict: it cannot move
    assert "<script>alert(1)" not in part
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in part
    page = (await client.get("/parked/")).content.decode()
    assert "<script>alert(1)" not in page
    removed = _marked(_figures(page)["old"], "removed")
    assert "gone" in removed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in removed


async def test_a_version_registered_before_graphs_were_kept_shows_its_node_list(deployed: None) -> None:
    earlier = await _started_under(V0, "v0-old")
    info = await earlier.store.get_workflow("versioned", H0)
    assert info is not None
    await earlier.store.put_workflow(info.model_copy(update={"graph": None}))  # as a row from before
    await runtime.engine()
    page = (await (await _client()).get("/parked/")).content.decode()
    old = _figures(page)["old"]
    assert "<svg" not in old
    assert "registered before the store kept diagrams" in old
    assert re.findall(r"<tr><td><code>([^<]*)</code></td>", old) == ["go", "ran"]
    assert "No comparison" in page
    part = (await (await _client(operator=False)).get("/executions/v0-old/parked/")).content.decode()
    assert "registered before the store kept diagrams" in part
    assert "Go: resume it" not in part  # a viewer may look, not act


async def test_a_stopped_executions_resume_report_pairs_its_version_with_the_newest(deployed: None) -> None:
    await _started_under(V0, "v0-r")
    await runtime.engine()
    reply = await (await _client()).post("/executions/v0-r/resume/", {})
    assert reply.status_code == 200
    report = reply.content.decode()
    assert "Resume preview" in report
    assert f"Its version <code>{H0}</code> beside the newest <code>{H2}</code>" in report
    assert _marked(_figures(report)["new"], "added") == ["checked", "noted"]


async def test_the_parked_routes_need_a_login_and_refuse_bad_input(deployed: None) -> None:
    await _started_under(V0, "v0-x")
    anonymous = AsyncClient()
    for url in ("/parked/", f"/parked/versioned/{H0}/rows/", "/executions/v0-x/parked/"):
        reply = await anonymous.get(url)
        assert reply.status_code == 302
        assert reply["Location"].startswith("/login/")
    client = await _client()
    bad = await client.get(f"/parked/versioned/{H0}/rows/", {"offset": "x"})
    assert bad.status_code == 400
    assert "offset: must be a whole number" in bad.content.decode()
    assert (await client.get(f"/parked/{'w' * 300}/{H0}/rows/")).status_code == 400
    missing = await client.get("/executions/nobody/parked/")
    assert missing.status_code == 404
    assert "no execution" in missing.content.decode()


async def test_the_execution_page_draws_a_parked_execution_from_its_stored_graph(deployed: None) -> None:
    await _started_under(OLDER, "older-d", inputs={"gone": 3})
    await runtime.engine()
    client = await _client(operator=False)
    drawn = {}
    for fmt in ("mermaid", "dot", "bpmn", "elk"):
        reply = await client.get(f"/executions/older-d/diagram/{fmt}/")
        assert reply.status_code == 200, fmt
        drawn[fmt] = reply.content.decode()
    assert "<svg" in drawn["dot"]
    assert "gone" in drawn["dot"]
    assert "completed" in drawn["mermaid"]
    assert "<script>alert(1)" not in drawn["dot"]
    earlier = FlowEngine(runtime.store())
    info = await earlier.store.get_workflow("versioned", H_OLDER)
    assert info is not None
    await earlier.store.put_workflow(info.model_copy(update={"graph": None}))
    gone = await client.get("/executions/older-d/diagram/dot/")
    assert gone.status_code == 404
    assert "is not served by this server" in gone.content.decode()


async def test_the_api_draws_any_registered_version_from_its_stored_graph(deployed: None) -> None:
    await _started_under(V0, "v0-api")
    await runtime.engine()
    client = await _client(operator=False)
    base = "/api/v1/workflows/versioned/versions"
    reply = await client.get(f"{base}/{H0}/diagram", {"format": "json"})
    assert reply.status_code == 200
    assert [n["name"] for n in reply.json()["nodes"]] == ["go", "ran"]
    newest = (await client.get(f"{base}/{H2}/diagram")).content.decode()  # Mermaid by default
    assert '"noted"' in newest
    missing = await client.get(f"{base}/nope/diagram")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"


async def test_the_workflow_api_keeps_the_graph_document_off_the_wire(deployed: None) -> None:
    await runtime.engine()
    client = await _client(operator=False)
    listed = await client.get("/api/v1/workflows")
    assert listed.status_code == 200
    described = await client.get("/api/v1/workflows/versioned")
    assert described.status_code == 200
    assert [w["id"] for w in listed.json() if w["id"] == "versioned"] == ["versioned"]
    assert "graph" not in described.json()
