"""The health page shows every worker process's heartbeat (recorded through the store contract), escaped,
with executors silent for more than three heartbeats marked stale."""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.engine.engine import FlowEngine
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.heartbeats import Heartbeat
from tests.console.test_views import ESCAPED, engine, operator

__all__ = ["engine", "operator"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _beat(executor_id: str, **changes: Any) -> Heartbeat:
    beat = Heartbeat(
        executor_id=executor_id,
        host="box-1",
        pid=4242,
        workers_alive=1,
        workers_configured=3,
        poll_failures=17,
        last_poll_failure="OperationalError: <script>alert(1)</script>",
        last_poll_failure_at=None,
        store_failures=2,
        claims_held=("c-9",),
    )
    return dataclasses.replace(beat, **changes)


def _row(page: str, executor_id: str) -> str:
    found = re.search(rf'<tr class="executor [a-z]+" data-executor="{executor_id}">.*?</tr>', page, re.S)
    assert found, page
    return found.group(0)


def _cells(row: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


async def test_the_health_page_shows_each_heartbeat_escaped(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    await runtime.store().record_heartbeat(_beat("box-1-4242-a"))
    page = (await operator.get("/health/")).content.decode()
    row = _row(page, "box-1-4242-a")
    assert 'class="executor unhealthy"' in row
    cells = _cells(row)
    assert cells[:8] == [
        "box-1-4242-a",
        "box-1 / 4242",
        "unhealthy",
        "1 / 3",
        "17",
        ESCAPED.join(["OperationalError: ", ""]),
        "2",
        "c-9",
    ]
    assert re.fullmatch(r"[0-9]s ago \(\d\d:\d\d:\d\d\)", cells[8]), cells[8]
    assert "<script>alert(1)" not in page
    assert '<a href="/executions/c-9">c-9</a>' in row
    # the claims-per-executor section stays
    assert "Claims held, per executor" in page


async def test_a_silent_executor_is_stale_and_the_part_refreshes_alone(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    quiet_clock = ManualClock(runtime.store().clock.now() - timedelta(seconds=30))
    quiet = DjangoStore(runtime.store().using, quiet_clock)
    try:
        await quiet.record_heartbeat(_beat("box-1-1-quiet", workers_alive=3))
    finally:
        await quiet.aclose()
    await runtime.store().record_heartbeat(_beat("box-1-2-busy", workers_alive=3, poll_failures=0))
    part = (await operator.get("/health/executors/")).content.decode()
    assert "<html" not in part
    assert re.findall(r'<tr class="executor ([a-z]+)" data-executor="([^"]+)"', part) == [
        ("stale", "box-1-1-quiet"),
        ("healthy", "box-1-2-busy"),
    ]
