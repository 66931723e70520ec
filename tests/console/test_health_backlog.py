"""The health page shows the backlog (executions ready and unclaimed now, how long the oldest has waited,
the claim latency's p50/p95 from `flowdeck_claim_latency_seconds`) and tells the truth about workers
running in the web process itself, as the demo's do."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from django.test import AsyncClient

from flowdeck.console import backlog, heartbeat
from flowdeck.engine.engine import FlowEngine
from tests.console import flows
from tests.console.test_views import engine, operator
from tests.engine.engine_support import until

__all__ = ["engine", "operator"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def fresh_fold() -> AsyncIterator[None]:
    backlog.reset()
    yield
    backlog.reset()


def _text(page: str, element_id: str) -> str:
    found = re.search(rf'<dd id="{element_id}">(.*?)</dd>|<td id="{element_id}">(.*?)</td>', page, re.S)
    assert found, page
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found[1] or found[2])).strip())


async def test_the_backlog_counts_what_waits_for_a_worker(engine: FlowEngine, operator: AsyncClient) -> None:
    page = (await operator.get("/health/")).content.decode()
    assert (_text(page, "backlog-ready"), _text(page, "backlog-oldest")) == ("0", "none is waiting")
    assert _text(page, "claim-latency") == "no claim seen lately"
    # the web engine runs no workers: what it starts waits for one
    ids = [await engine.workflows.start("counter", inputs={"count": {"n": n}}) for n in (1, 2, 3)]
    page = (await operator.get("/health/")).content.decode()
    assert _text(page, "backlog-ready") == "3"
    assert re.fullmatch(r"(<1 s|\d+ s) \(since \d\d:\d\d:\d\d\)", _text(page, "backlog-oldest"))
    workers = FlowEngine(engine.store, (), workers=1, poll_timeout=timedelta(milliseconds=200))
    await workers.register("counter", flows.counter)
    async with workers:
        for eid in ids:
            await until(workers.store, eid)
    page = (await operator.get("/health/")).content.decode()
    assert _text(page, "backlog-ready") == "0"
    latency = _text(page, "claim-latency")
    shape = r"p50 \S+ m?s · p95 \S+ m?s over the last 3 claims \(estimated .*\)"
    assert re.fullmatch(shape, latency), latency


async def test_workers_in_this_process_are_told(engine: FlowEngine, operator: AsyncClient) -> None:
    page = (await operator.get("/health/")).content.decode()
    assert _text(page, "workers-here").startswith("none (this web process runs no workers;")
    workers = FlowEngine(engine.store, (), workers=2, poll_timeout=timedelta(milliseconds=200))
    async with workers, heartbeat.publishing(workers):
        page = (await operator.get("/health/")).content.decode()
    here = _text(page, "workers-here")
    assert here.startswith(f"{workers.executor_id}: 2 of 2 alive (in-process workers"), here
    assert "runs no workers;" not in here
    page = (await operator.get("/health/")).content.decode()
    assert _text(page, "workers-here").startswith("none")  # they stopped with their block


def test_quantiles_are_read_off_the_buckets_as_prometheus_does() -> None:
    buckets = [(0.01, 2.0), (0.1, 6.0), (1.0, 10.0), (float("inf"), 10.0)]
    assert backlog.quantile(buckets, 0.5) == pytest.approx(0.01 + 0.09 * (3 / 4))
    assert backlog.quantile(buckets, 0.95) == pytest.approx(0.1 + 0.9 * (3.5 / 4))
    assert backlog.quantile([(0.5, 0.0), (float("inf"), 4.0)], 0.5) == 0.5  # the open bucket: its floor
