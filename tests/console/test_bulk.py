"""Bulk operations by query (console.bulk) through the REST API, in-process on the real store (SQLite by
default, PostgreSQL with DATABASE_URL): cancel, the resume dry run's summary (clean, F0101, F0102), go over
the clean ones, end; each outcome recorded; reruns change nothing; refusals (no permission, a bad filter)
and a filter matching nothing; a large operation running as a task; an interrupted one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient
from django.utils import timezone

from flowdeck.console import bulk, discovery, live, runtime
from flowdeck.console.models import Activity, create_token
from flowdeck.engine import Flow
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import _user
from tests.console.versioned_flows import V0

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.filterwarnings("ignore:Returning tuple:DeprecationWarning"),
]

# Older versions of `versioned` no process serves: one took an input the newest never asks for (F0101 on
# resume), one recorded `checked` as text where the newest records a bool (F0102: a value of another type).
GONE = Flow.init("versioned").input("go", bool).input("gone", int).output("ran", lambda ctx: "gone", type=str)
TEXT_CHECKED = Flow.init("versioned").input("go", bool).input("ran", str).input("checked", str)


@pytest.fixture(autouse=True)
async def _close_thread_connections() -> AsyncIterator[None]:
    yield
    await bulk.wait_all()
    await sync_to_async(connections.close_all)()


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The console tests' flows and `versioned` (V1, V2) served here; V0, GONE and TEXT_CHECKED by nobody."""
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    discovery.discover(["tests.console.flows", "tests.console.versioned_flows"])
    runtime.reset()
    live.reset()
    yield
    live.reset()
    runtime.reset()


async def started_under(flow: Flow, *eids: str, inputs: dict[str, Any] | None = None) -> None:
    earlier = FlowEngine(runtime.store())
    await earlier.register("versioned", flow)
    for eid in eids:
        await earlier.workflows.start("versioned", execution_id=eid, inputs=inputs)


async def parked_mix() -> FlowEngine:
    """Two executions that resume cleanly, one with F0101, one with F0102, all parked; the newest
    versions registered again afterwards (the last registered is the newest)."""
    await started_under(V0, "p-clean-1", "p-clean-2")
    await started_under(GONE, "p-f0101", inputs={"gone": 3})
    await started_under(TEXT_CHECKED, "p-f0102", inputs={"go": True, "ran": "v0", "checked": "maybe"})
    runtime.reset()
    return await runtime.engine()


@pytest.fixture
async def token(served: None) -> dict[str, Any]:
    key = await sync_to_async(lambda: create_token(_user("olga", True), "t"))()
    return {"headers": {"Authorization": f"Bearer {key}"}, "content_type": "application/json"}


async def post(api: dict[str, Any], body: Any) -> tuple[int, Any]:
    reply = await AsyncClient().post("/api/v1/executions/bulk", json.dumps(body), **api)
    return reply.status_code, reply.json()


async def test_the_api_dry_run_summarises_then_go_resumes_the_clean_ones(token: dict[str, Any]) -> None:
    engine = await parked_mix()
    status, dry = await post(token, {"action": "resume", "workflowId": "versioned", "idPrefix": "p-"})
    assert (status, dry["state"], dry["action"], dry["matched"], dry["done"]) == (
        200,
        "done",
        "bulk:resume:dry-run",
        4,
        4,
    )
    summary = {k: sorted(v) for k, v in dry["summary"].items()}
    assert summary == {
        "clean": ["p-clean-1", "p-clean-2"],
        "stops_again": [],
        "F0101": ["p-f0101"],
        "F0102": ["p-f0102"],
        "not_resumable": [],
        "other": [],
    }
    assert dry["codes"] == {"p-f0101": "resume_conflict", "p-f0102": "resume_conflict"}
    assert "F0101" in dry["why"]["p-f0101"]
    status, go = await post(token, {"action": "resume", "go": True, "fromOperation": dry["id"]})
    assert (status, go["action"], sorted(go["outcomes"].items())) == (
        200,
        "bulk:resume:go",
        [("p-clean-1", "accepted"), ("p-clean-2", "accepted")],
    )
    newest = engine._registry.latest("versioned").hash
    assert [(await engine.store.get_execution(e)).hash == newest for e in ("p-clean-1", "p-f0101")] == [
        True,
        False,
    ]
    resumed = len((await engine.executions.history("p-clean-1", None)).events)
    status, again = await post(token, {"action": "resume", "go": True, "fromOperation": dry["id"]})
    assert status == 200
    # a second go finds them running on a served version, no longer parked: refused, nothing written
    assert again["codes"] == {"p-clean-1": "not_resumable", "p-clean-2": "not_resumable"}
    assert sorted(again["outcomes"].values()) == ["refused", "refused"]
    assert (await engine.store.get_execution("p-clean-1")).hash == newest
    assert len((await engine.executions.history("p-clean-1", None)).events) == resumed
    reply = await AsyncClient().get(f"/api/v1/operations/{dry['id']}", headers=token["headers"])
    assert (reply.status_code, reply.json()["summary"]["F0102"]) == (200, ["p-f0102"])


async def test_the_api_cancels_by_query_and_a_rerun_changes_nothing(token: dict[str, Any]) -> None:
    engine = await runtime.engine()
    for eid in ("c-1", "c-2", "d-1"):
        await engine.workflows.start("counter", execution_id=eid)
    await engine.end("c-2", "gone", actor="t")
    status, op = await post(
        token, {"action": "cancel", "workflowId": "counter", "idPrefix": "c-", "reason": "tidy"}
    )
    assert (status, op["outcomes"]) == (200, {"c-1": "accepted", "c-2": "already-terminal"})
    assert (await engine.store.get_execution("c-1")).cancel_requested
    assert not (await engine.store.get_execution("d-1")).cancel_requested
    status, again = await post(token, {"action": "cancel", "workflowId": "counter", "idPrefix": "c-"})
    assert again["outcomes"] == {"c-1": "already-requested", "c-2": "already-terminal"}
    row = await Activity.objects.aget(pk=op["id"])
    assert (row.action, row.outcome, row.detail["reason"], row.detail["done"]) == (
        "bulk:cancel",
        "accepted",
        "tidy",
        2,
    )
    history = (await engine.executions.history("c-1", None)).events
    assert sum(1 for e in history if e.kind.value == "cancel_requested") <= 1


async def test_the_api_ends_by_query_and_refuses_confirmations_that_no_longer_hold(
    token: dict[str, Any],
) -> None:
    engine = await runtime.engine()
    for eid in ("e-1", "e-2"):
        await engine.workflows.start("counter", execution_id=eid)
    status, refused = await post(token, {"action": "end", "idPrefix": "e-", "expectedCount": 3})
    assert (status, refused["code"], refused["detail"]) == (409, "count_changed", {"matched": 2})
    assert not await Activity.objects.filter(action="bulk:end").aexists()
    status, op = await post(
        token, {"action": "end", "idPrefix": "e-", "expectedCount": 2, "reason": "by hand"}
    )
    assert (status, op["counts"]) == (200, {"accepted": 2})
    assert str((await engine.store.get_execution("e-1")).status.show()).startswith("failed")
    status, again = await post(token, {"action": "end", "idPrefix": "e-"})
    assert again["counts"] == {"already-terminal": 2}


async def test_the_api_refuses_bad_input_viewers_and_acts_on_nothing_when_nothing_matches(
    token: dict[str, Any],
) -> None:
    assert (await post(token, {"action": "cancel", "status": "sideways"}))[0] == 400
    status, empty = await post(token, {"action": "end", "status": ""})  # not "every execution"
    assert (status, empty["code"]) == (400, "invalid_filter")
    assert (await post(token, {"action": "resume", "go": True, "fromOperation": 0}))[0] == 400
    assert (await post(token, {"action": "cancel", "where": ["field:nope"]}))[0] == 400
    assert (await post(token, {"action": "explode"}))[0] == 400
    assert (await post(token, {"action": "cancel", "workflowId": "nosuch"}))[0] == 404
    status, missing = await post(token, {"action": "resume", "go": True, "fromOperation": 99_999})
    assert (status, missing["code"]) == (404, "operation_not_found")
    status, op = await post(token, {"action": "cancel", "idPrefix": "nothing-"})
    assert (status, op["matched"], op["total"], op["outcomes"], op["state"]) == (200, 0, 0, {}, "done")
    # an operation that is not a resume dry run cannot be resumed from
    status, wrong = await post(token, {"action": "resume", "go": True, "fromOperation": op["id"]})
    assert (status, wrong["code"]) == (409, "not_a_dry_run")
    viewer = await sync_to_async(lambda: create_token(_user("victor", False), "v"))()
    reply = await AsyncClient().post(
        "/api/v1/executions/bulk",
        json.dumps({"action": "cancel"}),
        headers={"Authorization": f"Bearer {viewer}"},
        content_type="application/json",
    )
    assert (reply.status_code, reply.json()["code"]) == (403, "permission_denied")
    assert (await AsyncClient().get("/api/v1/operations/12345", headers=token["headers"])).status_code == 404


async def test_a_large_operation_runs_as_a_task_and_a_dead_one_reads_as_interrupted(
    token: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = await runtime.engine()
    for n in range(5):
        await engine.workflows.start("counter", execution_id=f"t-{n}")
    monkeypatch.setattr(bulk, "INLINE_MAX", 2)
    monkeypatch.setattr(bulk, "FLUSH_EVERY", 2)
    status, op = await post(token, {"action": "cancel", "idPrefix": "t-"})
    assert (status, op["state"], op["total"]) == (202, "running", 5)
    await bulk.wait_all()
    done = await bulk.load(op["id"])
    assert done is not None
    assert (done.state, done.done, done.counts()) == ("done", 5, {"accepted": 5})
    # a process that died mid-way: its row says running, its beat stopped
    dead = await bulk.create("olga", "api", "cancel", ["t-0", "t-1"])
    later = timezone.now() + bulk.STALE + timedelta(seconds=1)
    assert (await bulk.load(dead)).state == "running"  # type: ignore[union-attr]
    assert (await bulk.load(dead, now=later)).state == "interrupted"  # type: ignore[union-attr]


async def test_the_population_is_capped_newest_first_and_the_cap_is_recorded(
    token: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = await runtime.engine()
    for n in range(3):
        await engine.workflows.start("counter", execution_id=f"m-{n}")
    monkeypatch.setattr(bulk, "CAP", 2)
    monkeypatch.setattr(bulk, "_PAGE", 1)  # paged one at a time: the snapshot pages through the matches
    ids, matched = await bulk.snapshot(engine, bulk.Where(prefix="m-"), cap=2)
    assert (ids, matched) == (["m-2", "m-1"], 3)
    status, op = await post(token, {"action": "cancel", "idPrefix": "m-"})
    assert (status, op["matched"], op["total"], op["capped"], sorted(op["outcomes"])) == (
        200,
        3,
        2,
        True,
        ["m-1", "m-2"],
    )
    assert not (await engine.store.get_execution("m-0")).cancel_requested


async def test_an_action_on_every_execution_needs_all_and_the_count_seen(token: dict[str, Any]) -> None:
    """No filter acts on every execution (issue 27, item 6): only with `"all": true` and `expectedCount`;
    without them, or with `all` and a filter, a 400 naming what is wrong and nothing recorded."""
    engine = await runtime.engine()
    for eid in ("c-1", "c-2"):
        await engine.workflows.start("counter", execution_id=eid)
    for body, missing in (
        ({"action": "cancel"}, "all"),
        ({"action": "cancel", "expectedCount": 2}, "all"),
        ({"action": "cancel", "all": False, "expectedCount": 2}, "all"),
        ({"action": "end", "all": True}, "expectedCount"),
        ({"action": "cancel", "all": True, "expectedCount": 1, "idPrefix": "c-"}, "all"),
        ({"action": "resume", "all": True, "expectedCount": 2, "where": ["field:n.k=1"]}, "all"),
    ):
        status, refused = await post(token, body)
        assert (status, refused["code"], refused["detail"]) == (400, "invalid_filter", {"parameter": missing})
    assert not await Activity.objects.filter(action__startswith="bulk").aexists()
    assert not (await engine.store.get_execution("c-1")).cancel_requested
    status, changed = await post(token, {"action": "cancel", "all": True, "expectedCount": 3})
    assert (status, changed["code"]) == (409, "count_changed")
    status, op = await post(token, {"action": "cancel", "all": True, "expectedCount": 2})
    assert (status, op["outcomes"]) == (200, {"c-1": "accepted", "c-2": "accepted"})
