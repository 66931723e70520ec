"""Rate limits on every surface (issue 31 points 3 and 5): an execution held back by its rate limit reads
`rate-limited` (its badge `running·rate-limited`) on the list and its status filter, the execution page
(with "rate-limited by LIMIT until …"), REST and `flowdeck ls`/`show`, like every state of the truth table;
the limit itself is listed by `GET /api/v1/rate-limits`, `flowdeck rate-limits`, the Limits page's
(`/limits/`) rate limits section and the metrics, with its configured rate (FLOWDECK_RATE_LIMITS), its
tokens and the executions it holds back now. On SQLite (the test database) and PostgreSQL."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient

from flowdeck.console import rate_limits, runtime
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.engine.rate_limits import RateLimit
from tests.console.backends import (  # noqa: F401  (fixtures)
    _postgres_alias_first,
    backend_fixture,
    engine_fixture,
    postgres_alias,
)
from tests.console.test_truth_table import _execution_surfaces, _html, _list_surfaces
from tests.console.test_views import _user
from tests.engine.engine_support import until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

LIMIT = "truth-carrier"
TRUTH = {"rl-first": "completed", "rl-held": "rate-limited"}


def carrier_calls() -> Flow:
    return Flow.init("carrier_calls").input("carrier", str).step("call", lambda ctx: None, rate_limit=LIMIT)


@pytest.fixture
def declared(settings: Any) -> None:
    """The limit declared in the settings, before the web engine is built (its configured rate shows)."""
    settings.FLOWDECK_RATE_LIMITS = {LIMIT: {"count": 1, "per": "hour"}}


async def _held(web: FlowEngine) -> None:
    """`rl-first` takes the hour's token; `rl-held` then waits for the next one, unclaimed."""
    limits = {LIMIT: RateLimit(1, per="hour")}
    workers = FlowEngine(
        web.store, [carrier_calls()], workers=1, poll_timeout=timedelta(milliseconds=200), rate_limits=limits
    )
    async with workers:
        await workers.workflows.start("carrier_calls", execution_id="rl-first", inputs={"carrier": "dhl"})
        await until(web.store, "rl-first")
        await workers.workflows.start("carrier_calls", execution_id="rl-held", inputs={"carrier": "dhl"})
        await until(web.store, "rl-held", lambda s: bool(s.waits) and s.executor is None)


def _cli(*args: str) -> str:
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


async def test_a_rate_limited_execution_and_its_limit_on_every_surface(
    declared: None, engine: FlowEngine
) -> None:
    # The login first: on SQLite the test database is an in-memory shared cache, whose write lock a writer
    # meets as "database table is locked" without waiting (SQLITE_LOCKED), and a stopped engine's last poll
    # may still be finishing its claim transaction on a store thread when `_held` returns (CI saw it).
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    await _held(engine)

    await _list_surfaces(client, TRUTH, "carrier_calls")
    await _execution_surfaces(client, "rl-held", "rate-limited")
    page = await _html(client, "/executions/rl-held")
    assert re.search(
        rf"rate-limited</span> by <b>{LIMIT}</b> until \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page
    )
    rest = json.loads((await client.get("/api/v1/executions/rl-held")).content)
    [wait] = rest["waits"]
    assert (wait["kind"], wait["limit"], wait["path"]) == ("rate-limited", LIMIT, f"call#rate:{LIMIT}")
    filtered = await _html(client, f"/executions/?status=rate-limited:{LIMIT}")
    assert re.findall(r'<tr data-execution-id="([^"]+)"', filtered) == ["rl-held"]

    cli = sync_to_async(_cli, thread_sensitive=False)
    listed = json.loads(await cli("ls", "--workflow", "carrier_calls", "--json"))
    assert {i["execution_id"]: i["state"] for i in listed["items"]} == TRUTH
    assert f"call rate-limited ({LIMIT}) until" in await cli("show", "rl-held")

    expected = {
        "name": LIMIT,
        "configured": "1 per hour",
        "configuredPerSecond": 1 / 3600,
        "perKey": False,
        "burst": 1,
        "taken": 1,
        "reserved": 1,
        "keys": 1,
        "rateLimitedNow": 1,
        "busiest": [],
    }
    [api] = json.loads((await client.get("/api/v1/rate-limits")).content)
    assert {k: api[k] for k in expected} == expected
    assert api["observedPerSecond"] >= 0
    [shown] = json.loads(await cli("rate-limits", "--json"))["items"]  # the CLI's JSON is snake_case
    assert {k: shown[re.sub("([A-Z])", r"_\1", k).lower()] for k in expected} == expected
    listed = await cli("rate-limits")
    assert "1 per hour" in listed
    observed = rate_limits.rate_text(api["observedPerSecond"])  # one wording of the observed rate, everywhere
    assert f" {observed} " in listed

    section = await _html(client, "/limits/")
    assert f'data-rate-limit="{LIMIT}"' in section
    assert f">{observed}</td>" in section
    assert f'href="/executions/?status=rate-limited:{LIMIT}"' in section
    assert 'data-limited="1"' in section
    scraped = (await client.get("/metrics")).content.decode()
    assert f'flowdeck_rate_limited_executions{{limit="{LIMIT}"}} 1.0' in scraped
    assert f'flowdeck_rate_limit_tokens_total{{limit="{LIMIT}",outcome="reserved"}} 1.0' in scraped
    runtime.reset()


async def test_no_rate_limit_reads_so(engine: FlowEngine) -> None:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", False))
    assert json.loads((await client.get("/api/v1/rate-limits")).content) == []
    assert "No rate limit." in await _html(client, "/limits/")
