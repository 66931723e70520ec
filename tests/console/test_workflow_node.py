"""The workflow page's per-node numbers and one node's fragment (`GET /workflows/<id>/nodes/<key>`), in
process on the test database: executions at each node now, failures by kind, and duration p50/p95, written
through the store the console reads."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console.flows import HOSTILE_NAME

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


@pytest.fixture
async def viewer(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    user = await sync_to_async(get_user_model().objects.create_user)("victor", password="x")
    await client.aforce_login(user)
    return client


async def _ran(
    engine: FlowEngine, eid: str, took: float, failure: str | None = None, kind: str | None = None
) -> None:
    """An execution of `counter` whose `double` step took `took` seconds and completed, or failed with
    `failure` (of `kind`), written through the store as a worker writes it."""
    store = engine.store
    info = await store.get_workflow("counter")
    assert info is not None
    t0 = store.now()

    def event(kind_: spi.EventKind, at: float, **data: Any) -> spi.Event:
        return spi.Event(kind_, "counter", eid, t0 + timedelta(seconds=at), data)

    handle = await store.create_claimed_if_absent(
        eid, "counter", info.structural_hash, spi.Running(), event(K.CREATED, 0),
        executor_id="t", lease=timedelta(minutes=5),
    )  # fmt: skip
    assert handle is not None
    await handle.append_event(event(K.STEP_STARTED, 0, step_name="double", executor_id="t"))
    if failure is None:
        await handle.append_event(event(K.STEP_COMPLETED, took, step_name="double"))
        ending = spi.Terminal(spi.Completed(), event(K.COMPLETED, took))
    else:
        await handle.append_event(
            event(K.STEP_FAILED, took, step_name="double", error=failure, error_kind=kind)
        )
        ending = spi.Terminal(spi.Failed(failure, kind), event(K.FAILED, took, error=failure))
    assert await handle.finish(ending) == spi.StatusOutcome.APPLIED


async def _waiting(engine: FlowEngine, eid: str) -> None:
    """An execution of `counter` parked on its input `count`, as a worker leaves it."""
    store = engine.store
    info = await store.get_workflow("counter")
    assert info is not None
    created = spi.Event(K.CREATED, "counter", eid, store.now())
    handle = await store.create_claimed_if_absent(
        eid,
        "counter",
        info.structural_hash,
        spi.Running(),
        created,
        executor_id="t",
        lease=timedelta(minutes=5),
    )
    assert handle is not None
    waiting = spi.Event(K.INPUT_WAITING, "counter", eid, store.now(), {"input_name": "count"})
    await handle.record_wait("count", spi.WakeOnField("count"), waiting)
    assert await handle.finish(spi.Suspended(frozenset({"count"}))) == spi.StatusOutcome.APPLIED


def _cells(page: str, path: str) -> list[str]:
    row = re.search(rf'<tr data-path="{re.escape(path)}">(.*?)</tr>', page, re.S)
    assert row is not None, f"no row for {path} in the node table"
    return [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)
    ]


async def test_the_workflow_page_counts_each_node(engine: FlowEngine, viewer: AsyncClient) -> None:
    for eid in ("w-1", "w-2"):
        await _waiting(engine, eid)
    for n, took in enumerate([0.2, 0.4, 0.3, 1.2]):
        await _ran(engine, f"d-{n}", took)
    await _ran(engine, "f-1", 0.1, "card declined", "Declined")
    await _ran(engine, "f-2", 0.1, "card declined", "Declined")
    await _ran(engine, "f-3", 0.1, "boom")

    page = (await viewer.get("/workflows/counter/")).content.decode()
    assert _cells(page, "count") == ["count", "waiting 2", "", "0", "–", "–"]
    assert _cells(page, "double") == ["double", "", "untyped 1 Declined 2", "4", "300 ms", "1.2s"]
    assert re.search(r'<aside id="node-panel"[^>]*\sdata-node-url="/workflows/counter/nodes/"', page)

    counts = json.loads((await viewer.get("/workflows/counter/counts/")).content)
    assert counts["counts"] == {"count": {"waiting": 2}}
    assert counts["nodes"]["double"] == {
        "now": {},
        "completions": 4,
        "p50_ms": 300.0,
        "p95_ms": 1200.0,
        "p50": "300 ms",
        "p95": "1.2s",
        "failures": {"": 1, "Declined": 2},
        "lost": {},
    }


async def test_a_nodes_fragment_shows_its_numbers(engine: FlowEngine, viewer: AsyncClient) -> None:
    await _waiting(engine, "w-1")
    await _ran(engine, "d-1", 2.5)
    await _ran(engine, "f-1", 0.1, "card declined", "Declined")

    reply = await viewer.get("/workflows/counter/nodes/double")
    assert reply.status_code == 200
    html = reply.content.decode()
    assert "<html" not in html
    assert 'data-node-key="double"' in html
    assert "<code>double</code>" in html
    assert ">output<" in html
    assert re.search(r'data-stat="p50">2\.5s<', html)
    assert re.search(r'data-stat="p95">2\.5s<', html)
    assert "over the 1 completion in the newest 200 executions" in html
    assert re.search(r"<code>Declined</code></td><td class=\"num\">1<", html)

    waiting = (await viewer.get("/workflows/counter/nodes/count")).content.decode()
    assert 'data-state="waiting">waiting 1<' in waiting
    assert "No failure." in waiting
    assert 'data-stat="p50">–<' in waiting


async def test_a_nodes_fragment_escapes_and_refuses(engine: FlowEngine, viewer: AsyncClient) -> None:
    from urllib.parse import quote

    hostile = (await viewer.get("/workflows/hostile/nodes/" + quote(HOSTILE_NAME, safe=""))).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile
    assert HOSTILE_NAME not in hostile

    missing = await viewer.get("/workflows/counter/nodes/nowhere")
    assert missing.status_code == 404
    assert "nowhere" in missing.content.decode()
    assert (await viewer.get("/workflows/nobody/nodes/double")).status_code == 404
    assert (await viewer.get("/workflows/counter/nodes/")).status_code == 400
    assert (await AsyncClient().get("/workflows/counter/nodes/double")).status_code == 302
