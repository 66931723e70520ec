"""The Django admin under `/admin/`, in-process: the store's rows read-only (executions filtered by workflow
and status, their events, workflows), bounded lists, links to the console's pages, staff only; and the API
tokens made and revoked there, which the API then accepts and refuses.

Each case runs with the executions on SQLite (the test database) and on PostgreSQL (the store suite's
migrated alias); users, sessions and tokens stay in the test database."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import ApiToken
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from flowdeck.store.django import admin as store_admin
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401  (fixtures)
from tests.console.seed_overview import seed_execution

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

SEEDED = {
    "ok-1": "completed",
    "ok-2": "completed",
    "bad-1": "failed",
    "stop-1": "stopped",
    "wait-1": "waiting",
}


@pytest.fixture
async def engine(backend: str) -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    engine = await runtime.engine()
    for eid, how in SEEDED.items():
        await seed_execution(engine.store, eid, how, "KeyError" if how == "failed" else "F0001")
    yield engine
    live.reset()
    runtime.reset()
    # the admin's ORM reads ran in the request thread (not the store's pool): close its connections there
    await sync_to_async(connections.close_all)()


def _user(name: str, **flags: bool) -> Any:
    users = get_user_model()
    if flags.get("is_superuser"):
        return users.objects.create_superuser(name, password="x")
    return users.objects.create_user(name, password="x", **flags)


async def _client(name: str, **flags: bool) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)(name, **flags))
    return client


@pytest.fixture
async def staff(engine: FlowEngine) -> AsyncClient:
    return await _client("sam", is_staff=True)


async def _page(client: AsyncClient, url: str, status: int = 200) -> str:
    reply = await client.get(url)
    assert reply.status_code == status, reply.content[:600]
    return reply.content.decode()


def _listed(page: str) -> set[str]:
    """The ids in a change list's first column."""
    return {html.unescape(m) for m in re.findall(r'<th class="field-id"><a href="[^"]*">([^<]*)</a>', page)}


async def test_the_executions_list_filters_by_workflow_and_status(staff: AsyncClient) -> None:
    assert _listed(await _page(staff, "/admin/flowstore/execution/")) == set(SEEDED)
    completed = await _page(staff, "/admin/flowstore/execution/?status=completed")
    assert _listed(completed) == {"ok-1", "ok-2"}
    assert "2 executions" in completed
    both = await _page(staff, "/admin/flowstore/execution/?status=failed&workflow=counter")
    assert _listed(both) == {"bad-1"}
    assert _listed(await _page(staff, "/admin/flowstore/execution/?workflow=absent")) == set()
    assert _listed(await _page(staff, "/admin/flowstore/execution/?q=ok-")) == {"ok-1", "ok-2"}
    # the console's page of each, by its URL name
    assert 'href="/executions/ok-1"' in completed


async def test_a_long_list_counts_no_further_than_its_cap(
    staff: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_admin, "CAP", 2)
    monkeypatch.setattr(store_admin.CappedPaginator, "cap", 2)
    monkeypatch.setattr(store_admin.ExecutionAdmin, "list_per_page", 1)
    page = await _page(staff, "/admin/flowstore/execution/")
    assert "more than 2 executions" in page
    assert _listed(page) == {"wait-1"}  # newest created first
    assert _listed(await _page(staff, "/admin/flowstore/execution/?p=2")) == {"stop-1"}
    assert "?p=3" not in page  # the pages past the cap are not offered


async def test_an_execution_is_shown_read_only_and_links_to_its_events_and_console_page(
    staff: AsyncClient,
) -> None:
    page = await _page(staff, "/admin/flowstore/execution/bad-1/change/")
    assert 'name="flow_id"' not in page
    assert 'name="_save"' not in page
    assert "KeyError" in page
    assert 'href="/executions/bad-1"' in page
    events_link = "/admin/flowstore/event/?execution__id__exact=bad-1"
    assert events_link in page
    events = await _page(staff, events_link)
    kinds = re.findall(r'<td class="field-kind">([^<]*)</td>', events)
    assert kinds == ["Created", "Failed"]  # in the execution's order
    searched = await _page(staff, "/admin/flowstore/event/?q=bad-1")
    assert re.findall(r'<td class="field-kind">([^<]*)</td>', searched) == ["Created", "Failed"]
    only = await _page(staff, events_link + "&kind=Failed")
    assert re.findall(r'<td class="field-kind">([^<]*)</td>', only) == ["Failed"]


async def test_nothing_of_the_store_is_added_changed_or_deleted(
    staff: AsyncClient, engine: FlowEngine
) -> None:
    for url in (
        "/admin/flowstore/execution/bad-1/change/",
        "/admin/flowstore/execution/bad-1/delete/",
        "/admin/flowstore/execution/add/",
        "/admin/flowstore/workflow/counter/change/",
        "/admin/flowstore/workflow/add/",
    ):
        reply = await staff.post(url, {"flow_id": "changed", "status_kind": "completed", "post": "yes"})
        assert reply.status_code == 403, url
    state = await engine.store.get_execution("bad-1")
    assert state is not None
    assert state.flow_id == "counter"
    assert isinstance(state.status, spi.Failed)
    listing = await _page(staff, "/admin/flowstore/execution/")
    assert "Add execution" not in listing
    assert 'name="action"' not in listing


async def test_workflows_list_their_versions_and_link_to_the_console(staff: AsyncClient) -> None:
    listing = await _page(staff, "/admin/flowstore/workflow/")
    assert "counter" in _listed(listing)
    page = await _page(staff, "/admin/flowstore/workflow/counter/change/")
    assert 'href="/workflows/counter/"' in page
    assert "/admin/flowstore/execution/?workflow=counter" in page
    info = await runtime.engine()
    version = await info.store.get_workflow("counter")
    assert version is not None
    assert version.structural_hash in page


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
async def test_only_staff_get_in(engine: FlowEngine, who: str) -> None:
    client = AsyncClient() if who == "anonymous" else await _client("nora")
    for url in ("/admin/", "/admin/flowstore/execution/", "/admin/flowdeck_console/apitoken/"):
        reply = await client.get(url)
        assert (reply.status_code, reply["Location"].split("?")[0]) == (302, "/admin/login/"), url


async def test_a_token_made_in_the_admin_works_until_revoked_there(engine: FlowEngine) -> None:
    admin = await _client("ada", is_superuser=True)
    owner = await sync_to_async(_user)("otto")
    made = await admin.post(
        "/admin/flowdeck_console/apitoken/add/",
        {"user": owner.pk, "name": "ci", "expires_0": "", "expires_1": ""},
    )
    assert made.status_code == 200, made.content[:600]  # the answer itself, no redirect
    assert "no-store" in made["Cache-Control"]
    secrets = re.findall(r'<code id="token-secret">(fd_[A-Za-z0-9_-]{40,})</code>', made.content.decode())
    assert len(secrets) == 1
    assert "messages" not in made.cookies  # never in a cookie
    bearer = {"Authorization": f"Bearer {secrets[0]}"}
    api = AsyncClient()
    assert (await api.get("/api/v1/workflows", headers=bearer)).status_code == 200
    token = await ApiToken.objects.aget(name="ci")
    assert token.user_id == owner.pk
    assert secrets[0] not in token.key_hash

    listing = await _page(admin, "/admin/flowdeck_console/apitoken/?state=active")
    assert secrets[0] not in listing
    assert ">ci<" in listing
    revoked = await admin.post(
        "/admin/flowdeck_console/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    assert "Revoked 1 token(s)" in revoked.content.decode()
    assert (await api.get("/api/v1/workflows", headers=bearer)).status_code == 401
    assert ">ci<" in await _page(admin, "/admin/flowdeck_console/apitoken/?state=revoked")
    again = await admin.post(
        "/admin/flowdeck_console/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}, follow=True
    )
    assert "Revoked 0 token(s) (1 already were)" in again.content.decode()


async def test_a_token_needs_a_name_and_a_future_expiry(engine: FlowEngine) -> None:
    admin = await _client("ada", is_superuser=True)
    owner = await sync_to_async(_user)("otto")
    for name, day in (("", ""), ("123", ""), ("ok", "2001-01-01")):
        reply = await admin.post(
            "/admin/flowdeck_console/apitoken/add/",
            {"user": owner.pk, "name": name, "expires_0": day, "expires_1": "00:00:00" if day else ""},
        )
        assert reply.status_code == 200, name
        assert "errorlist" in reply.content.decode(), name
    assert await ApiToken.objects.acount() == 0


async def test_staff_without_the_token_permissions_only_look(engine: FlowEngine) -> None:
    staff = await _client("sam", is_staff=True)
    await sync_to_async(ApiToken.objects.create)(
        user=await sync_to_async(_user)("otto"), name="ci", key_hash="x"
    )
    listing = await _page(staff, "/admin/flowdeck_console/apitoken/")
    assert ">ci<" in listing
    assert 'value="revoke"' not in listing
    assert (await staff.get("/admin/flowdeck_console/apitoken/add/")).status_code == 403
