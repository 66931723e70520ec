"""`GET /metrics` in-process: guarded as the API is, parseable by prometheus_client's own parser, and right
after real executions ran through a real worker (an engine of its own on the same store, publishing its
heartbeat as `flowdeck_workers` does): started and ended per workflow and status, attempts and their durations
per node, retries, claim latency, the executions now, workers alive, store failures.

Each case runs with the executions on SQLite (the test database) and on PostgreSQL (the store suite's
migrated alias); users, sessions and tokens stay in the test database."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from flowdeck.console import heartbeat, live, metrics, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import create_token
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from tests.console import panel_flows
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401  (fixtures)
from tests.engine.engine_support import until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


_locked_once: set[str] = set()


def _write(ctx: Any) -> None:
    """A body whose first try meets a locked database, as an ORM write beside a busy writer does."""
    if ctx.key not in _locked_once:
        _locked_once.add(ctx.key)
        raise sqlite3.OperationalError("database is locked")


LOCKED = Flow.init("locked").step("write", _write)


@pytest.fixture
async def web(backend: str) -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows", "tests.console.panel_flows"])
    runtime.reset()
    live.reset()
    metrics.reset()
    yield await runtime.engine()
    metrics.reset()
    live.reset()
    runtime.reset()
    await sync_to_async(connections.close_all)()


@pytest.fixture
async def viewer(web: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    user = await sync_to_async(get_user_model().objects.create_user)("victor", password="x")
    await client.aforce_login(user)
    return client


@pytest.fixture
async def workers(web: FlowEngine, viewer: AsyncClient) -> AsyncIterator[FlowEngine]:
    """A worker process's engine on the same store, started after the login (whose session write must not
    meet a worker's open SQLite transaction), publishing its heartbeat."""
    engine = FlowEngine(
        web.store, (), workers=1, poll_timeout=timedelta(milliseconds=200), transient=runtime.TRANSIENT
    )
    for name, flow in {**panel_flows.FLOWS, "locked": LOCKED}.items():
        await engine.register(name, flow)
    async with engine, heartbeat.publishing(engine, every=timedelta(seconds=60)):
        yield engine


async def _scrape(client: AsyncClient, **headers: str) -> Samples:
    reply = await client.get("/metrics", headers=headers)
    assert reply.status_code == 200, reply.content[:400]
    assert reply["Content-Type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(reply.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _kinds(history: spi.HistoryPage, kind: spi.EventKind) -> int:
    return sum(1 for e in history.events if e.kind is kind)


async def test_anonymous_callers_are_refused(web: FlowEngine) -> None:
    reply = await AsyncClient().get("/metrics")
    assert reply.status_code == 401
    assert reply.json()["code"] == "unauthenticated"
    assert reply["WWW-Authenticate"] == 'Bearer realm="flowdeck"'
    wrong = await AsyncClient().get("/metrics", headers={"Authorization": "Bearer fd_nothing"})
    assert wrong.status_code == 401


async def test_a_bearer_token_or_a_session_reads_them(web: FlowEngine, viewer: AsyncClient) -> None:
    user = await sync_to_async(get_user_model().objects.create_user)("prom", password="x")
    token = await sync_to_async(create_token)(user, "prometheus")
    samples = await _scrape(AsyncClient(), Authorization=f"Bearer {token}")
    assert _value(samples, "flowdeck_store_up") == 1
    assert _value(await _scrape(viewer), "flowdeck_store_up") == 1


async def test_head_answers_as_get_and_other_methods_are_a_plain_405(web: FlowEngine) -> None:
    """A scraper's HEAD is a GET without the body; a POST (even a session's, with no CSRF token) is the
    405 naming what the address takes, never the CSRF page."""
    user = await sync_to_async(get_user_model().objects.create_user)("prom", password="x")
    token = await sync_to_async(create_token)(user, "prometheus")
    bearer = {"Authorization": f"Bearer {token}"}
    session = AsyncClient(enforce_csrf_checks=True)
    await session.aforce_login(user)

    head = await AsyncClient().head("/metrics", headers=bearer)
    assert (head.status_code, head["Content-Type"], head.content) == (200, metrics.CONTENT_TYPE, b"")
    refused = [
        await session.post("/metrics"),
        await AsyncClient().post("/metrics", headers=bearer),
        await AsyncClient().put("/metrics"),
        await AsyncClient().delete("/metrics"),
    ]
    assert [(r.status_code, r["Content-Type"], r["Allow"]) for r in refused] == [
        (405, "text/plain; charset=utf-8", "GET, HEAD")
    ] * 4
    assert refused[0].content.decode() == "/metrics does not take POST; it takes GET, HEAD\n"


async def _run(engine: FlowEngine, workflow: str) -> str:
    eid = await engine.workflows.start(workflow)
    await until(
        engine.store, eid, lambda s: s.status.terminal or isinstance(s.status, spi.Stopped), seconds=20
    )
    return eid


async def test_real_executions_are_counted_timed_and_claimed(
    web: FlowEngine, viewer: AsyncClient, workers: FlowEngine
) -> None:
    before = await _scrape(viewer)  # the first scrape starts this process's counters
    assert _value(before, "flowdeck_executions_started_total", workflow="flaky") == 0
    runs = {"flaky": [await _run(workers, "flaky")], "fanout": [await _run(workers, "fanout") for _ in "ab"]}
    runs["undone"] = [await _run(workers, "undone")]
    runs["locked"] = [await _run(workers, "locked")]
    samples = await _scrape(viewer)

    ended: dict[tuple[str, str], int] = {}
    claimed: dict[str, int] = {}
    for workflow, eids in runs.items():
        assert _value(samples, "flowdeck_executions_started_total", workflow=workflow) == len(eids)
        for eid in eids:
            state = await web.store.get_execution(eid)
            assert state is not None
            word = spi.status_to_json(state.status)["type"]
            ended[(workflow, word)] = ended.get((workflow, word), 0) + 1
            history = await web.store.get_history(eid)
            claimed[workflow] = claimed.get(workflow, 0) + _kinds(history, spi.EventKind.EXECUTION_CLAIMED)
    assert ended == {
        ("flaky", "stopped"): 1,
        ("fanout", "completed"): 2,
        ("undone", "failed"): 1,
        ("locked", "completed"): 1,
    }
    for (workflow, word), n in ended.items():
        assert _value(samples, "flowdeck_executions", workflow=workflow, status=word) == n
    assert _value(samples, "flowdeck_executions_ended_total", workflow="fanout", status="completed") == 2
    assert _value(samples, "flowdeck_executions_ended_total", workflow="undone", status="failed") == 1
    assert _value(samples, "flowdeck_executions_ended_total", workflow="flaky", status="failed") == 0
    assert _value(samples, "flowdeck_executions_stopped_total", workflow="flaky", code="F0003") == 1

    # flaky's charge: three attempts, the first two retried (a back-off each), the last failed (a stop)
    attempts = "flowdeck_node_attempt_duration_seconds_count"
    assert _value(samples, attempts, workflow="flaky", node="charge", outcome="retried") == 2
    assert _value(samples, attempts, workflow="flaky", node="charge", outcome="failed") == 1
    assert _value(samples, "flowdeck_node_retries_total", workflow="flaky", node="charge") == 2
    assert _value(samples, "flowdeck_transient_retries_total", workflow="flaky", node="charge") == 0
    # a locked database in a body: retried (EngineConfig.transient) and counted apart
    assert _value(samples, "flowdeck_node_retries_total", workflow="locked", node="write") == 1
    assert _value(samples, "flowdeck_transient_retries_total", workflow="locked", node="write") == 1
    assert _value(samples, attempts, workflow="undone", node="refuse", outcome="failed") == 1
    # a foreach's items are one node: three items in each of two runs
    assert _value(samples, attempts, workflow="fanout", node="items~*", outcome="completed") == 6
    total = _value(
        samples,
        "flowdeck_node_attempt_duration_seconds_sum",
        workflow="flaky",
        node="charge",
        outcome="failed",
    )
    assert 0 <= total < 5
    # every claim of the runs timed, from the moment each became ready; none took the test's length
    for workflow, n in claimed.items():
        assert _value(samples, "flowdeck_claim_latency_seconds_count", workflow=workflow) == n
        assert _value(samples, "flowdeck_claim_latency_seconds_bucket", workflow=workflow, le="30.0") == n

    executor = workers.health().executor_id
    host = heartbeat._beat_of(workers, web.store.now(), stopped=False).host
    assert _value(samples, "flowdeck_executors") == 1
    assert _value(samples, "flowdeck_workers_alive", executor=executor, host=host) == 1
    assert _value(samples, "flowdeck_store_failures_total", executor=executor, host=host) == 0
    assert _value(samples, "flowdeck_metrics_feed_lag_events") == 0

    # the README's table names every metric there is, and no other
    documented = set(
        re.findall(r"`(flowdeck_[a-z_]+)`", README.split("## Metrics", 1)[1].split("\n## ", 1)[0])
    )
    exposed = {name for name, _ in samples if not name.endswith("_created")}  # each counter's start
    # a gauge per limited workflow has no sample where no workflow declares a limit: its family is there
    reply = (await viewer.get("/metrics")).content.decode()
    families = {family.name for family in text_string_to_metric_families(reply)}
    for name in documented:
        if name.startswith("flowdeck_rate_limit"):
            continue  # one sample per declared limit, and these flows declare none (test_rate_limit_surfaces)
        assert any(e.startswith(name) for e in exposed) or name in families, name
    for name in exposed:
        assert any(name.startswith(d) for d in documented), name

    # a later scrape counts only what came since
    again = await _scrape(viewer)
    assert _value(again, "flowdeck_executions_started_total", workflow="fanout") == 2


async def test_the_fold_reads_a_foreach_item_as_its_node_and_a_retry_row_as_its_owner() -> None:
    assert metrics.node_label("items~2") == "items~*"
    assert metrics.node_label("outer~3~charge#retry2") == "outer~*~charge"
    assert metrics.node_label("charge") == "charge"


async def test_a_store_that_fails_is_said_not_raised(
    web: FlowEngine, viewer: AsyncClient, monkeypatch: Any
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise spi.FlowStoreError("the database is away")

    await _scrape(viewer)
    monkeypatch.setattr(web.store, "count_by_status", broken)
    monkeypatch.setattr(web.store, "events_after", broken)
    samples = await _scrape(viewer)
    assert _value(samples, "flowdeck_store_up") == 0
