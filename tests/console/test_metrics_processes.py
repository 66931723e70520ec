"""`/metrics` of the live console (daphne in one process, the workers in another, on PostgreSQL): the web
process, which runs no worker, counts the work the worker process did, read from the store they share."""

from __future__ import annotations

import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.console.conftest import Console

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _scrape(console: Console) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    request = urllib.request.Request(
        f"{console.base}/metrics", headers={"Authorization": f"Bearer {console.credentials['viewer_token']}"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _sum(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def test_the_web_process_counts_what_the_worker_process_did(console_live: Console) -> None:
    _scrape(console_live)  # the web process's counters start at its first scrape
    before = _scrape(console_live)
    eids = [f"metrics-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for eid in eids:
        reply = console_live.operator.post(
            "/workflows/counter/executions", {"executionId": eid, "inputs": {"count": {"n": 2}}}
        )
        assert reply.status == 200, reply.text
    for eid in eids:
        console_live.operator.until_status(eid, "completed")
    after = _scrape(console_live)

    def grew(name: str, **labels: str) -> float:
        return _sum(after, name, **labels) - _sum(before, name, **labels)

    assert grew("flowdeck_executions_started_total", workflow="counter") >= 3
    assert grew("flowdeck_executions_ended_total", workflow="counter", status="completed") >= 3
    assert grew("flowdeck_claim_latency_seconds_count", workflow="counter") >= 3
    completed = "flowdeck_node_attempt_duration_seconds_count"
    assert grew(completed, workflow="counter", node="double", outcome="completed") >= 3
    assert _sum(after, "flowdeck_executions", workflow="counter", status="completed") >= 3
    assert _sum(after, "flowdeck_workers_alive") >= 1  # the worker process's heartbeat
    assert _sum(after, "flowdeck_store_up") == 1
