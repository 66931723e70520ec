"""A filter past `store.filter_limits` (issue 27, item 1), on every surface that reads one: the REST search,
list and bulk routes (a 400 naming the filter), the console's list and its rows fragment (the problem
beside the table, as for any term that is not one), the bulk confirmation (the styled 400 page), and
`flowdeck ls` / `flowdeck cancel --where` (one line, exit 2). Nothing is recorded.

A path 1,000 keys deep was a 500 on PostgreSQL (`json.dumps` recursed past its limit building the
containment document) and a number of 4,400 digits a 500 everywhere (Python will not convert it), so each
case runs with the executions on SQLite and on PostgreSQL."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.console.models import Activity, create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.backends import (  # noqa: F401  (fixtures)
    _postgres_alias_first,
    backend_fixture,
    engine_fixture,
    postgres_alias,
)
from tests.console.test_views import _user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

DEEP = "field:order." + ".".join(["k"] * 1000) + "=1"
HUGE = "field:order.total=" + "9" * 4400
TOO_MANY = " ".join(f"field:order.total={n}" for n in range(21))
SAID = {DEEP: "at most 64 keys and indexes deep", HUGE: "a field: term is at most 4000 characters"}
HOSTILE = pytest.mark.parametrize("term", [DEEP, HUGE], ids=["deep", "huge"])


async def _token() -> dict[str, str]:
    key = await sync_to_async(lambda: create_token(_user("olga", True), "t"))()
    return {"Authorization": f"Bearer {key}"}


async def _post(path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    reply = await AsyncClient().post(path, json.dumps(body), headers=headers, content_type="application/json")
    return reply.status_code, reply.json()


@HOSTILE
async def test_the_api_refuses_a_filter_past_the_limits(engine: FlowEngine, term: str) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    headers = await _token()
    status, body = await _post("/api/v1/executions/search", {"where": [term]}, headers)
    assert (status, body["code"], SAID[term] in body["error"]) == (400, "invalid_filter", True)
    listed = await AsyncClient().get("/api/v1/executions", {"q": term}, headers=headers)
    assert (listed.status_code, listed.json()["detail"], SAID[term] in listed.json()["error"]) == (
        400,
        {"parameter": "q"},
        True,
    )
    status, body = await _post("/api/v1/executions/bulk", {"action": "cancel", "where": [term]}, headers)
    assert (status, body["code"], SAID[term] in body["error"]) == (400, "invalid_filter", True)
    assert not await Activity.objects.filter(action__startswith="bulk").aexists()
    assert not (await engine.store.get_execution("c-1")).cancel_requested


async def test_the_api_refuses_more_terms_than_the_limit(engine: FlowEngine) -> None:
    headers = await _token()
    listed = await AsyncClient().get("/api/v1/executions", {"q": TOO_MANY}, headers=headers)
    assert (listed.status_code, listed.json()["detail"]) == (400, {"parameter": "q"})
    assert "at most 20 field: terms (got 21)" in listed.json()["error"]


@HOSTILE
async def test_the_console_list_and_its_rows_say_what_is_wrong_with_the_filter(
    engine: FlowEngine, term: str
) -> None:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    for params in ({"q": term}, {"q": term, "partial": "rows"}):
        reply = await client.get("/executions/", params)
        assert (reply.status_code, SAID[term] in reply.content.decode()) == (200, True), params
    bulk = await client.get("/executions/bulk/", {"q": term, "action": "cancel"})
    assert (bulk.status_code, SAID[term] in bulk.content.decode()) == (400, True)
    assert "<!doctype html>" in bulk.content.decode()
    form = {"q": term, "action": "cancel", "confirmed": "0"}
    assert (await client.post("/executions/bulk/run/", form)).status_code == 400
    assert not await Activity.objects.filter(action__startswith="bulk").aexists()


def _flow(*args: str) -> None:
    try:
        call_command("flowdeck", *args, stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        runtime.reset()


@HOSTILE
def test_the_cli_refuses_a_filter_past_the_limits_with_exit_2(backend: str, term: str) -> None:
    for verb in ("ls", "cancel"):
        with pytest.raises(CommandError) as refused:
            _flow(verb, "--where", term)
        assert (refused.value.returncode, SAID[term] in str(refused.value)) == (2, True), verb
    assert not Activity.objects.filter(action__startswith="bulk").exists()


def test_the_cli_counts_every_where_term(backend: str) -> None:
    terms = [arg for n in range(21) for arg in ("--where", f"field:order.total={n}")]
    for verb in ("ls", "cancel"):
        with pytest.raises(CommandError, match=r"at most 20 field: terms \(got 21\)") as refused:
            _flow(verb, *terms)
        assert refused.value.returncode == 2
    assert not Activity.objects.filter(action__startswith="bulk").exists()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_api_search_answers_at_most_1000_and_pages_on(engine: FlowEngine) -> None:
    """`"limit": -1` listed every execution in one answer (issue 27, item 2): it takes 1 to 1000, as
    `GET /executions` does, and `offset` pages on."""
    for eid in ("c-1", "c-2", "c-3"):
        await engine.workflows.start("counter", execution_id=eid)
    headers = await _token()
    for limit in (-1, 0, 1001, 2**31 - 1):
        status, body = await _post("/api/v1/executions/search", {"limit": limit}, headers)
        named = body["detail"][0]["loc"][-1]
        assert (status, body["code"], named) == (400, "invalid_request", "limit"), limit
    status, body = await _post("/api/v1/executions/search", {"limit": 1000}, headers)
    assert (status, body["total"]) == (200, 3)
    status, body = await _post("/api/v1/executions/search", {"limit": 2, "offset": 2}, headers)
    assert (status, [i["executionId"] for i in body["items"]], body["total"]) == (200, ["c-1"], 3)
