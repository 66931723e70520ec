"""The list's triage options on every surface (issue 14, point 2): the console list, `GET /api/v1/executions`
and `flow ls` read the same words (`console.views.list_query`): the order by created or updated, the
`parked` filter, the creation window (days, or instants) and the last-change window; a value a word cannot
take is a 400 naming the parameter (the page and the API) or exit 2 naming the option (the CLI).

Each case runs with the executions on SQLite (the test database) and on PostgreSQL (the store suite's
migrated alias); users, sessions and tokens stay in the test database."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient

from flowdeck.console import runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.backends import (  # noqa: F401  (fixtures)
    _postgres_alias_first,
    backend_fixture,
    engine_fixture,
    postgres_alias,
)
from tests.console.test_list_triage import _parked, ids_of
from tests.console.test_views import _user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")


async def _world(engine: FlowEngine) -> dict[str, str]:
    """`p-1` (parked), then `c-1`, `c-2`, `c-3` started in turn, then `c-1` changed last. Answers the
    instants the cases cut at: c-2's creation and c-1's last change."""
    await _parked(engine, "p-1")
    for eid in ("c-1", "c-2", "c-3"):
        await engine.workflows.start("counter", execution_id=eid)
    await engine.executions.signal("c-1", "count", {"n": 2})
    c1, c2 = await engine.store.get_execution("c-1"), await engine.store.get_execution("c-2")
    assert c1 is not None
    assert c2 is not None
    return {"c2_created": c2.created.isoformat(), "c1_updated": c1.updated.isoformat()}


def _cases(at: dict[str, str]) -> list[tuple[dict[str, str], list[str]]]:
    """(the query words, the ids listed, in order): the same on every surface."""
    return [
        ({"workflow": "counter"}, ["c-3", "c-2", "c-1", "p-1"]),
        ({"workflow": "counter", "sort": "updated"}, ["c-1", "c-3", "c-2", "p-1"]),
        ({"status": "parked"}, ["p-1"]),
        ({"created_after": at["c2_created"]}, ["c-3", "c-2"]),
        ({"created_before": at["c2_created"], "workflow": "counter"}, ["c-1", "p-1"]),
        ({"updated_after": at["c1_updated"]}, ["c-1"]),
        ({"updated_before": at["c1_updated"], "sort": "updated"}, ["c-3", "c-2", "p-1"]),
        ({"created_after": at["c2_created"], "updated_before": at["c1_updated"]}, ["c-3", "c-2"]),
        ({"created_after": "1h", "status": "running", "q": "c-"}, ["c-3", "c-2", "c-1"]),
    ]


async def test_the_console_list_takes_instants_and_shows_and_keeps_them(engine: FlowEngine) -> None:
    at = await _world(engine)
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    for words, listed in _cases(at):
        page = (await client.get("/executions/", words)).content.decode()
        assert ids_of(page) == listed, words
    page = (await client.get("/executions/", {"updated_after": "2026-12-01T15:10:00Z"})).content.decode()
    assert '<input type="hidden" name="updated_after" value="2026-12-01T15:10:00Z">' in page
    assert "last changed from 2026-12-01 15:10:00 UTC" in page
    assert re.search(r'href="/executions/\?" id="clear-bounds"', page)
    refused = await client.get("/executions/", {"created_before": "soon"})
    assert (refused.status_code, "created_before: an instant is ISO 8601" in refused.content.decode()) == (
        400,
        True,
    )


async def test_the_api_lists_with_the_console_lists_words(engine: FlowEngine) -> None:
    at = await _world(engine)
    token = await sync_to_async(lambda: create_token(_user("olga", True), "t"))()
    client, headers = AsyncClient(), {"Authorization": f"Bearer {token}"}

    async def get(words: dict[str, Any]) -> tuple[int, Any]:
        reply = await client.get("/api/v1/executions", words, headers=headers)
        return reply.status_code, reply.json()

    for words, listed in _cases(at):
        status, body = await get(words)
        assert status == 200, (words, body)
        assert ([i["executionId"] for i in body["items"]], body["total"]) == (listed, len(listed)), words
    status, page = await get({"workflow": "counter", "sort": "updated", "limit": 2, "offset": 1})
    assert (status, [i["executionId"] for i in page["items"]], page["total"]) == (200, ["c-3", "c-2"], 4)
    for words, parameter in (
        ({"sort": "id"}, "sort"),
        ({"created_after": "soon"}, "created_after"),
        ({"updated_before": "2026-13-01"}, "updated_before"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"status": "bogus"}, "status"),
        ({"q": "a b"}, "q"),
    ):
        status, body = await get(words)
        assert (status, body["detail"]["parameter"], body["error"].startswith(parameter)) == (
            400,
            parameter,
            True,
        ), words
    status, body = await get({"limit": 0})
    assert (status, body["code"]) == (400, "invalid_request")
    assert (await AsyncClient().get("/api/v1/executions")).status_code == 401


def flow(*args: str) -> Any:
    out = io.StringIO()
    call_command("flowdeck", "ls", "--json", *args, stdout=out, stderr=io.StringIO())
    runtime.reset()
    return json.loads(out.getvalue())


def _options(words: dict[str, str]) -> list[str]:
    """The query words as `flowdeck ls` options (`q`'s id prefix is its `--prefix`)."""
    options = []
    for name, value in words.items():
        options += ["--prefix" if name == "q" else f"--{name.replace('_', '-')}", value]
    return options


def test_flow_ls_takes_the_same_options(backend: str) -> None:
    discover(["tests.console.flows"])
    runtime.reset()

    async def seed() -> dict[str, str]:
        try:
            return await _world(await runtime.engine())
        finally:
            runtime.reset()

    at = async_to_sync(seed)()
    for words, listed in _cases(at):
        found = flow(*_options(words))
        assert ([i["execution_id"] for i in found["items"]], found["total"]) == (listed, len(listed)), words
    for args, said in (
        (["--sort", "id"], "--sort: sort by one of: created, updated (got 'id')"),
        (["--created-after", "soon"], "--created-after: an instant is ISO 8601"),
        (["--updated-before", "tomorrow"], "--updated-before: an instant is ISO 8601"),
        (["--status", "bogus"], "unknown status filter 'bogus'"),
    ):
        with pytest.raises(CommandError, match=re.escape(said)) as refused:
            flow(*args)
        assert refused.value.returncode == 2


async def test_a_list_a_bulk_action_cannot_match_offers_none(engine: FlowEngine) -> None:
    """A bulk operation takes the status, workflow and search: from a windowed or parked list it would act
    on more than the list shows, so the list says so instead of linking to it."""
    await _world(engine)
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("olga", True))
    for words, offered in (
        ({"workflow": "counter"}, True),
        ({"created_after": "1h"}, False),
        ({"created_from": "2026-01-01"}, False),
        ({"status": "parked"}, False),
    ):
        page = (await client.get("/executions/", words)).content.decode()
        assert ('id="bulk-all"' in page, 'id="bulk-not-here"' in page) == (offered, not offered), words
