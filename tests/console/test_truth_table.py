"""The truth table (issue 29): the demo's executions, really run by an engine's workers, read back from
every surface that shows an execution's state or a node's, which must all say the same thing.

The demo's set (console/demo.py) holds a completed order (its race won by the automatic decision), one
awaiting approval (an undecided race: the person's input waiting, the grace period sleeping), a sleeping
follow-up, a declined and a refunded failure, a stopped one, a cancelled one and a parked one (started
under the previous version of `fulfilment`, which no process serves). Each is read from the list (its
rows and its status filter), the overview's and the workflow page's counts, the execution page's badge and
Status field, REST (`state`), `flowdeck ls --json`, and the metrics gauge; its nodes from the JSON progress,
Mermaid, DOT, BPMN, ELK, the node panel and the timeline's lane pills (the execution lane's pill says the
execution's state, its kind filter offers every kind of its history). Then the operator's actions (issue
29 point 4): `demo-stopped` answered reads `stopped·answered` ("answered, awaiting resume") everywhere
and its `ship` answered, and `demo-cancelled` paints what its cancel cut short interrupted, with no
pending-cancel line. Run with the executions on SQLite and on PostgreSQL.

The executions and the example's ledger live on one database of their own, as in production: a SQLite
file (WAL, IMMEDIATE transactions: a write waits for another) or the PostgreSQL alias. Not the in-memory
test database: its shared cache refuses a write meeting another connection's ("database table is
locked") instead of waiting, and the `reservations` foreach writes the ledger from two body threads.
Users and sessions stay in the test database."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import connections
from django.test import AsyncClient

from flowdeck.console import demo, live, metrics, runtime, states
from flowdeck.console.conf import flowdeck_settings
from flowdeck.console.discovery import discover
from flowdeck.engine import places, render
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.node_status import NodeStatus
from flowdeck.engine.render.bpmn import NS
from flowdeck.engine.render.common import COLOURS
from tests.console.backends import _postgres_alias_first, postgres_alias  # noqa: F401
from tests.console.test_views import _user
from tests.engine.engine_support import until
from tests.store.django_support import add_alias, migrate, sqlite_config

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

# The state each demo execution is in, as an operator sees it.
TRUTH = {
    "demo-completed": "completed",
    "demo-awaiting-approval": "waiting",
    "demo-declined": "failed",
    "demo-refunded": "failed",
    "demo-stopped": "stopped",
    "demo-cancelled": "cancelled",
    "demo-parked": "parked",
}
FOLLOW_UP = {"demo-sleeping": "sleeping"}
# the states a Running row is refined into, whose badge reads `running·<state>`
RUNNING_REFINED = ("waiting", "sleeping", "retrying", "rate-limited")
STATUS_OF_COLOUR = {colour.lower(): str(status) for status, colour in COLOURS.items()}


async def _seed(web: FlowEngine) -> None:
    """The demo's executions, all started before any worker runs, then run by one attempt at a time until
    each settles where the demo wants it (console/demo.py)."""
    workers = FlowEngine(web.store, (), workers=1, batch_size=1, poll_timeout=timedelta(milliseconds=200))
    await demo.seed_parked(workers.store)
    await runtime.serve(workers)
    for wanted in demo.WANTED:
        await workers.workflows.start(
            wanted.workflow_id, execution_id=wanted.execution_id, inputs=wanted.inputs
        )
    async with workers:
        for wanted in demo.WANTED:
            if wanted.cancel:
                await until(web.store, wanted.execution_id, lambda s: bool(s.waits) and s.executor is None)
                await workers.executions.cancel(wanted.execution_id, wanted.cancel, actor="demo")
            await until(web.store, wanted.execution_id, lambda s, w=wanted: demo._settled(s, w), seconds=30)


class LedgerRouter:
    """The example's ledger (app `fulfilment`) on the executions' database (`FLOWDECK_DATABASE_ALIAS`)."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        return flowdeck_settings().database_alias if model._meta.app_label == "fulfilment" else None

    def db_for_write(self, model: type[Any], **hints: Any) -> str | None:
        return self.db_for_read(model, **hints)


@pytest.fixture(scope="module", autouse=True)
def sqlite_file(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[str]:
    """A SQLite file of this module's own, migrated, added before any case's databases are read (a case
    may only use the aliases it names). Not the store suite's `fd_sqlite`: the process shares it, and a
    transactional case before this module's flushed it, the migration's rows too; this one's first case
    is the SQLite one."""
    yield from migrated_sqlite_file("truth_sqlite", tmp_path_factory, django_db_blocker)


def migrated_sqlite_file(
    alias: str, tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any
) -> Iterator[str]:
    """A migrated SQLite file under `alias` for one module, closed after it (an alias per module: a
    module's file is gone with it)."""
    add_alias(alias, sqlite_config(tmp_path_factory.mktemp(alias) / "flowdeck.sqlite3"))
    with django_db_blocker.unblock():
        migrate(alias)
    yield alias
    connections[alias].close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, settings: Any) -> str:
    """Where the executions and the ledger live: a SQLite file, or the PostgreSQL alias."""
    alias = "sqlite_file" if request.param == "sqlite" else "postgres_alias"
    settings.FLOWDECK_DATABASE_ALIAS = request.getfixturevalue(alias)
    settings.DATABASE_ROUTERS = [f"{__name__}.LedgerRouter"]
    return str(request.param)


@pytest.fixture
async def seeded(backend: str) -> AsyncIterator[FlowEngine]:
    """The demo's executions settled by an engine's workers (stopped afterwards), and the web engine."""
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    metrics.reset()
    web = await runtime.engine()
    await _seed(web)
    yield web
    live.reset()
    runtime.reset()
    metrics.reset()


@pytest.fixture
async def operator(seeded: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    return client


async def _html(client: AsyncClient, path: str) -> str:
    reply = await client.get(path)
    assert reply.status_code == 200, (path, reply.status_code)
    return reply.content.decode()


def _rows(html: str) -> dict[str, str]:
    """Each listed execution's badge state (`data-status` of its status cell)."""
    rows = re.findall(r'<tr data-execution-id="([^"]+)".*?data-status="([^"]+)"', html, re.S)
    return dict(rows)


async def _list_surfaces(client: AsyncClient, truth: dict[str, str], workflow: str) -> None:
    listed = _rows(await _html(client, f"/executions/?workflow={workflow}"))
    assert listed == truth
    for state in sorted(set(truth.values())):
        filtered = _rows(await _html(client, f"/executions/?workflow={workflow}&status={state}"))
        assert filtered == {e: s for e, s in truth.items() if s == state}, state
    running = _rows(await _html(client, f"/executions/?workflow={workflow}&status=running"))
    assert not set(running) & {e for e, s in truth.items() if s == "parked"}


def _tally(truth: dict[str, str]) -> dict[str, int]:
    """Counts by state as the overview's columns count them: a Running row's refinements are running."""
    out: dict[str, int] = {}
    for state in truth.values():
        column = (
            "running" if state in ("waiting", "sleeping", "retrying", "rate-limited", "cancelling") else state
        )
        out[column] = out.get(column, 0) + 1
    return out


async def _count_surfaces(client: AsyncClient, truth: dict[str, str], workflow: str) -> None:
    overview = await _html(client, "/")
    cells = re.findall(
        rf'href="/executions/\?status=([a-z]+)&amp;workflow={workflow}" data-status="[^"]*">(\d+)<', overview
    )
    assert {s: int(n) for s, n in cells} == _tally(truth)
    page = await _html(client, f"/workflows/{workflow}/")
    badges = re.findall(r'status=([a-z]+)">\1 (\d+)</a>', page)
    assert {s: int(n) for s, n in badges} == _tally(truth)
    assert "NeedsApproval" not in re.sub(r'<span class="badge st-lost".*?</span>', "", page)
    scraped = (await client.get("/metrics")).content.decode()
    gauge = re.findall(rf'flowdeck_executions\{{status="([a-z]+)",workflow="{workflow}"\}} (\S+)', scraped)
    assert {s: int(float(n)) for s, n in gauge} == _tally(truth)


async def _execution_surfaces(client: AsyncClient, execution_id: str, state: str) -> None:
    page = await _html(client, f"/executions/{execution_id}")
    assert re.search(rf'<h1>.*?data-status="{state}"', page, re.S), execution_id
    field = re.search(r'<dd id="status-text">([^<]*)</dd>', page)
    assert field is not None
    # the state line: `completed`, `failed:CardDeclined`, `running·waiting`, `parked` or `parked·stopped:…`
    shown = field.group(1).split(":")[0].split("·")
    assert (shown[0] if state == "parked" else shown[-1]) == state, (execution_id, field.group(1))
    assert "running" not in field.group(1) or state in RUNNING_REFINED, execution_id
    rest = json.loads((await client.get(f"/api/v1/executions/{execution_id}")).content)
    assert rest["state"] == state, execution_id


def _painted(text: str) -> dict[str, str]:
    """Node id → status, read from a Mermaid drawing's fills."""
    return {
        i: STATUS_OF_COLOUR[c.lower()] for i, c in re.findall(r"style (n\d+) fill:(#[0-9A-Fa-f]{6})", text)
    }


def _dot_painted(text: str) -> dict[str, str]:
    return {
        i: STATUS_OF_COLOUR[c.lower()]
        for i, c in re.findall(r'(n\d+) \[[^\]]*fillcolor="(#[0-9A-Fa-f]{6})"', text)
    }


def _elk_painted(node: dict[str, Any]) -> dict[str, str]:
    """Node id → status over an ELK graph and its nested children (a subflow holds its own)."""
    found: dict[str, str] = {}
    for child in node.get("children", []):
        found[child["id"]] = child.get("properties", {}).get("status", "")
        found.update(_elk_painted(child))
    return found


async def _drawn(engine: FlowEngine, client: AsyncClient, execution_id: str) -> dict[str, Any]:
    """The JSON progress (REST), checked against Mermaid (the console's route) and DOT: one painting."""
    reply = await client.get(f"/api/v1/executions/{execution_id}/diagram?format=json")
    assert reply.status_code == 200
    doc = json.loads(reply.content)
    statuses = {n["id"]: n["status"] for n in doc["nodes"]}
    mermaid = await _html(client, f"/executions/{execution_id}/diagram/mermaid/")
    assert _painted(mermaid) == statuses
    detail = await engine.executions.describe(execution_id)
    flow = engine.flow_of(detail.state)
    assert flow is not None
    assert _dot_painted(render.render(flow, "dot", progress=detail.progress)) == statuses
    bpmn = ET.fromstring(render.render(flow, "bpmn", progress=detail.progress).encode())
    fills = {
        s.get("bpmnElement"): str(s.get(f"{{{NS['color']}}}background-color")).lower()
        for s in bpmn.iter(f"{{{NS['bpmndi']}}}BPMNShape")
    }
    assert {i: STATUS_OF_COLOUR[fills[i]] for i in statuses} == statuses
    elk = _elk_painted(json.loads(render.render(flow, "elk", progress=detail.progress)))
    assert {i: elk[i] for i in statuses} == statuses
    return doc


def _gateways(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(n["kind"], n["status"]) for n in doc["nodes"] if n["kind"] in ("race-fork", "race-join")]


def _by_path(doc: dict[str, Any], path: str) -> list[str]:
    return [n["status"] for n in doc["nodes"] if n.get("path") == path]


async def _race_surfaces(engine: FlowEngine, client: AsyncClient) -> None:
    undecided = await _drawn(engine, client, "demo-awaiting-approval")
    # outer race, then the inner one (approval against the grace period): undecided, nothing completed
    assert _gateways(undecided) == [
        ("race-fork", "waiting"),
        ("race-join", "pending"),
        ("race-fork", "waiting"),
        ("race-join", "pending"),
    ]
    assert _by_path(undecided, "decision") == ["lost", "pending", "pending"]
    assert _by_path(undecided, "approval") == ["waiting"]
    assert _by_path(undecided, "grace") == ["sleeping"]
    won = await _drawn(engine, client, "demo-completed")
    assert _gateways(won) == [
        ("race-fork", "completed"),
        ("race-join", "completed"),
        ("race-fork", "lost"),
        ("race-join", "lost"),
    ]
    assert _by_path(won, "decision") == ["won", "lost", "lost"]
    assert _by_path(won, "approval") == ["lost"]
    assert _by_path(won, "grace") == ["lost"]


async def _parked_drawing(client: AsyncClient) -> None:
    mermaid = await _html(client, "/executions/demo-parked/diagram/mermaid/")
    painted = _painted(mermaid)
    assert painted, "the parked execution is drawn from its stored version"
    assert "running" not in painted.values()


async def _panel_status(client: AsyncClient, execution_id: str, key: str) -> str:
    """The node panel's state of the node with durable key `key`."""
    panel = await _html(client, f"/executions/{execution_id}/nodes/{key}")
    found = re.search(r'data-node-key="[^"]*" data-node-status="([a-z]+)"', panel)
    assert found is not None, panel[:200]
    return found[1]


async def _operator_actions(engine: FlowEngine, client: AsyncClient) -> None:
    """An answered stop and a cancel's cut-short nodes, on every surface (issue 29 point 4)."""
    cancelled = await _drawn(engine, client, "demo-cancelled")
    assert _by_path(cancelled, "approval") == ["interrupted"]  # the race was undecided: both arms cut short
    assert _by_path(cancelled, "grace") == ["interrupted"]
    assert await _panel_status(client, "demo-cancelled", "approval") == "interrupted"
    assert "<dt>Cancel</dt>" not in await _html(client, "/executions/demo-cancelled")
    answer = {"node": "ship", "value": '"TRACK-BY-HAND"'}
    reply = await client.post("/executions/demo-stopped/answer/", answer)
    assert reply.status_code == 200, reply.content
    answered = await _drawn(engine, client, "demo-stopped")
    assert (_by_path(answered, "ship"), _by_path(answered, "notify")) == (["answered"], ["pending"])
    assert await _panel_status(client, "demo-stopped", "ship") == "answered"
    page = await _html(client, "/executions/demo-stopped")
    badge = r'<h1>.*?class="badge st-answered" data-status="stopped"[^>]*>stopped·answered<'
    assert re.search(badge, page, re.S)
    assert '<dd id="status-text">stopped·answered:F0001</dd>' in page
    assert "Answered, awaiting resume." in page
    listed = await _html(client, "/executions/?workflow=fulfilment&status=stopped")
    assert _rows(listed) == {"demo-stopped": "stopped"}
    assert "answered, awaiting resume — F0001" in listed
    rest = json.loads((await client.get("/api/v1/executions/demo-stopped")).content)
    assert (rest["state"], rest["stateText"], rest["stop"]["answered"]) == (
        "stopped",
        "stopped·answered:F0001",
        True,
    )
    preview = (await client.post("/executions/demo-stopped/resume/")).content.decode()
    assert "resume-warning" not in preview  # answered: the resume goes on past ship
    stopped = _pills(await _html(client, "/executions/demo-stopped/timeline/"))
    assert (stopped["execution"], stopped["ship"]) == (
        ("stopped", "stopped·answered", ""),
        ("answered", "answered", ""),
    )
    cut = _pills(await _html(client, "/executions/demo-cancelled/timeline/"))
    assert (cut["approval"], cut["grace"]) == (("interrupted", "interrupted", ""),) * 2


def _pills(html: str) -> dict[str, tuple[str, str, str]]:
    """Each timeline lane's pill: (its state word, what it reads, the place's branch words)."""
    found = {}
    for row in html.split('<div class="tl-row" role="row"')[1:]:
        lane = re.search(r'data-tl-lane="([^"]+)"', row)
        pill = re.search(r'<span class="tl-state st-[a-z-]+" data-state="([a-z]+)"[^>]*>([^<]*)</span>', row)
        where = re.search(r'<span class="tl-where"[^>]*>([^<]*)</span>', row)
        assert lane is not None, row[:300]
        assert pill is not None, row[:300]
        found[lane[1]] = (pill[1], pill[2], where[1] if where else "")
    return found


async def _timeline_surfaces(engine: FlowEngine, client: AsyncClient, execution_id: str, state: str) -> None:
    """The timeline's pills say what the JSON progress paints: a node lane its place's status (for a path
    several places share, the place whose record the lane shows, named by its branch words), a foreach
    item's lane its foreach's (the demo's items end as their foreach does), the execution lane its state."""
    html = await _html(client, f"/executions/{execution_id}/timeline/")
    pills = _pills(html)
    assert pills.pop("execution") == (state, states.label_of(state), ""), execution_id
    reply = await client.get(f"/api/v1/executions/{execution_id}/diagram?format=json")
    painted: dict[str, list[str]] = {}
    for node in json.loads(reply.content)["nodes"]:
        if node.get("path"):
            painted.setdefault(node["path"], []).append(node["status"])
    detail = await engine.executions.describe(execution_id)
    flow = engine.flow_of(detail.state)
    assert flow is not None
    assert detail.progress is not None
    words = places.branch_words(flow)
    for lane, (word, text, where) in pills.items():
        assert word == text, (execution_id, lane, text)
        assert word in set(NodeStatus), (execution_id, lane, text)
        said = painted.get(lane) or painted[lane.split("~")[0]]  # a foreach item: its foreach
        if len(said) == 1:
            assert (word, where) == (said[0], ""), (execution_id, lane)
            continue
        recorded = [n for n in detail.progress.nodes if n.name == lane and n.recorded]
        assert len(recorded) == 1, (execution_id, lane)  # the demo's races: one arm holds the record
        assert (word, where) == (str(recorded[0].status), words[recorded[0].place]), (execution_id, lane)
        assert word in said
    history = json.loads((await client.get(f"/api/v1/executions/{execution_id}/history?limit=-1")).content)
    offered = re.findall(r'<option value="([A-Za-z]+)"', html.split("data-tl-kind")[1].split("</select>")[0])
    assert set(offered) == {e["kind"] for e in history["events"]}, execution_id


def _cli(*args: str) -> dict[str, Any]:
    """`manage.py flowdeck …` in a thread of its own (it runs its own event loop), its JSON answer."""
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


async def test_every_surface_tells_the_same_state(seeded: FlowEngine, operator: AsyncClient) -> None:
    await _list_surfaces(operator, TRUTH, "fulfilment")
    await _list_surfaces(operator, FOLLOW_UP, "follow_up")
    await _count_surfaces(operator, TRUTH, "fulfilment")
    for execution_id, state in {**TRUTH, **FOLLOW_UP}.items():
        await _execution_surfaces(operator, execution_id, state)
    await _race_surfaces(seeded, operator)
    for execution_id, state in {**TRUTH, **FOLLOW_UP}.items():
        if state != "parked":  # a parked execution's version is not served here: its pills are below
            await _timeline_surfaces(seeded, operator, execution_id, state)
    parked_pills = _pills(await _html(operator, "/executions/demo-parked/timeline/"))
    assert parked_pills == {"execution": ("parked", "parked", "")}  # nothing ran before it was parked
    await _parked_drawing(operator)
    cli = sync_to_async(_cli, thread_sensitive=False)
    listed = await cli("ls", "--workflow", "fulfilment", "--json", "--limit", "50")
    assert {i["execution_id"]: i["state"] for i in listed["items"]} == TRUTH
    parked = await cli("ls", "--status", "parked", "--json")
    assert [i["execution_id"] for i in parked["items"]] == ["demo-parked"]
    stopped = (await operator.post("/executions/demo-stopped/resume/")).content.decode()
    assert "the same mistake will stop it again: F0001 at ship" in stopped  # the version it stopped under
    await _operator_actions(await runtime.engine(), operator)  # the CLI closed the engine it shared
    shown = await cli("ls", "--status", "stopped", "--json")
    assert [(i["execution_id"], i["state"], i["state_text"]) for i in shown["items"]] == [
        ("demo-stopped", "stopped", "stopped·answered:F0001")
    ]
