"""Concurrency limits on every surface (the truth table's surfaces, for the `queued` state): an execution
over its limit reads `queued` with its key and its position on the execution page, the list (and its
`queued` filter), the overview's and the workflow page's counts, REST, `flowdeck show`/`ls`/`limits`, the
Limits page and the metrics. No worker runs here, so every execution started stays queued, in line."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from flowdeck.console import client as client_module
from flowdeck.console import discovery, live, metrics, runtime, states
from flowdeck.console.discovery import discover
from flowdeck.console.models import create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.test_schedule_cli import flow
from tests.console.test_views import _user

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


async def _started() -> FlowEngine:
    discover(["tests.console.flows", "tests.console.limit_flows"])
    runtime.reset()
    live.reset()
    engine = await runtime.engine()
    for n, customer in enumerate(("ada", "ada", "bo")):
        await engine.workflows.start("per_customer", execution_id=f"q{n}", inputs={"customer": customer})
    return engine


@pytest.fixture
def queued() -> Iterator[None]:
    async_to_sync(_started)()
    runtime.reset()
    yield
    runtime.reset()
    discovery._flows.pop("per_customer", None)


@pytest.fixture
async def engine() -> AsyncIterator[FlowEngine]:
    engine = await _started()
    yield engine
    live.reset()
    runtime.reset()
    discovery._flows.pop("per_customer", None)  # the other tests' processes serve what they always did


def _token() -> str:
    user = get_user_model().objects.filter(username="olga").first() or _user("olga", True)
    return create_token(user, "t")


async def _api(path: str) -> tuple[int, Any]:
    token = await sync_to_async(_token)()
    answer = await AsyncClient().get("/api/v1" + path, headers={"Authorization": f"Bearer {token}"})
    return answer.status_code, answer.json()


async def test_rest_reads_queued_with_key_and_position(engine: FlowEngine) -> None:
    status, detail = await _api("/executions/q1")
    assert status == 200
    assert (detail["state"], detail["stateText"]) == ("queued", "queued")
    assert detail["concurrency"] == {"limit": 2, "key": "ada", "perKey": 1}
    assert detail["queue"] == {
        "workflowId": "per_customer",
        "key": "ada",
        "position": 2,
        "capacity": 1,
        "running": 0,
        "text": "#2 in line for per_customer · key ada (0 of 1 running)",
    }
    status, page = await _api("/executions?status=queued&workflow=per_customer")
    assert status == 200, page
    assert sorted(item["executionId"] for item in page["items"]) == ["q0", "q1", "q2"]
    # the list's items carry the same `queue` as the execution's own read: its key and its position
    by_id = {item["executionId"]: item["queue"] for item in page["items"]}
    assert by_id["q1"] == detail["queue"]
    assert (by_id["q0"]["key"], by_id["q0"]["position"], by_id["q2"]["key"], by_id["q2"]["position"]) == (
        "ada",
        1,
        "bo",
        1,
    )
    status, searched = await _api_post("/executions/search", {"workflowId": "per_customer"})
    assert status == 200, searched
    assert {item["executionId"]: item["queue"] for item in searched["items"]} == by_id
    status, running = await _api("/executions?status=running&workflow=per_customer")
    assert (status, running["items"]) == (200, [])


async def _api_post(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    token = await sync_to_async(_token)()
    answer = await AsyncClient().post(
        "/api/v1" + path, body, content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return answer.status_code, answer.json()


async def test_the_client_reads_where_each_queued_stands(engine: FlowEngine) -> None:
    found = await client_module.aqueues_of(["q2", "q1", "nobody"])
    assert {eid: (q.group.key, q.position) for eid, q in found.items()} == {"q1": ("ada", 2), "q2": ("bo", 1)}
    assert found["q1"] == await client_module.aqueue_of("q1")


async def test_rest_lists_the_limits(engine: FlowEngine) -> None:
    status, found = await _api("/limits?workflow=per_customer")
    assert status == 200
    rows = [(i["workflowId"], i["key"], i["capacity"], i["running"], i["queued"]) for i in found["items"]]
    assert rows == [
        ("per_customer", None, 2, 0, 3),
        ("per_customer", "ada", 1, 0, 2),
        ("per_customer", "bo", 1, 0, 1),
    ]
    assert found["items"][0]["oldestQueuedWaitSeconds"] >= 0
    assert (await _api("/limits?busiest=-1"))[0] == 400


async def test_the_pages_show_queued_and_the_limits(engine: FlowEngine) -> None:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("victor", False))
    page = (await client.get("/executions/q1")).content.decode()
    assert 'class="badge st-queued"' in page
    assert "#2 in line for per_customer · key ada (0 of 1 running)" in page
    assert "2 running of its workflow; 1 per key ada" in page
    listed = (await client.get("/executions/?status=queued")).content.decode()
    assert "q0" in listed
    assert "q2" in listed
    # each queued row says where it waits, as the execution page does: its key and its position
    lines = re.findall(r'<span class="wait queue">([^<]*)</span>', listed)
    assert sorted(lines) == [
        "#1 in line for per_customer · key ada (0 of 1 running)",
        "#1 in line for per_customer · key bo (0 of 1 running)",
        "#2 in line for per_customer · key ada (0 of 1 running)",
    ]
    overview = (await client.get("/")).content.decode()
    cells = re.findall(
        r'href="/executions/\?status=([a-z]+)&amp;workflow=per_customer" data-status="[^"]*">(\d+)<', overview
    )
    assert dict(cells) == {"queued": "3"}
    workflow = (await client.get("/workflows/per_customer/")).content.decode()
    assert re.findall(r'status=([a-z]+)">\1 (\d+)</a>', workflow) == [("queued", "3")]
    limits = await client.get("/limits/")
    assert limits.status_code == 200
    text = limits.content.decode()
    assert 'data-workflow="per_customer"' in text
    assert "2 running; 1 per customer" in text
    assert 'data-key="ada"' in text
    assert 'href="/limits/"' in text
    assert 'class="active">Limits' in text.replace("\n", "")


def test_the_cli_shows_queued_and_lists_limits(queued: None) -> None:
    shown = flow("show", "q1")
    assert "status     queued" in shown
    assert "queued     #2 in line for per_customer · key ada (0 of 1 running)" in shown
    data = json.loads(flow("show", "q1", "--json"))
    assert (data["state"], data["queue"]["position"], data["concurrency"]["key"]) == ("queued", 2, "ada")
    listed = flow("ls", "--status", "queued", "--json")
    assert sorted(i["execution_id"] for i in json.loads(listed)["items"]) == ["q0", "q1", "q2"]
    queues = {i["execution_id"]: i["queue"] for i in json.loads(listed)["items"]}
    assert queues["q1"] == data["queue"]
    assert "#2 in line for per_customer · key ada (0 of 1 running)" in flow("ls", "--status", "queued")
    table = flow("limits")
    assert "per_customer · key ada" in table
    assert json.loads(flow("limits", "--json"))["items"][0]["queued"] == 3


async def test_the_metrics_count_the_queued_and_their_wait(engine: FlowEngine) -> None:
    metrics.reset()
    served = await states.served_by(engine)
    text = (await metrics.scrape(engine.store, timedelta(minutes=1), served)).decode()
    metrics.reset()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    queued = {
        s.labels["workflow"]: s.value
        for s in families["flowdeck_executions"].samples
        if s.labels["status"] == "queued"
    }
    assert queued == {"per_customer": 3.0}
    waits = {s.labels["workflow"]: s.value for s in families["flowdeck_oldest_queued_seconds"].samples}
    assert waits["per_customer"] >= 0
    held = {s.labels["workflow"]: s.value for s in families["flowdeck_limit_slots_held"].samples}
    assert held == {"per_customer": 0.0}
