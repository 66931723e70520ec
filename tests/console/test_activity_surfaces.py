"""The activity record from the REST API and the CLI: each verb writes its row attributed to the caller
(the token's user; `--as USER` or `cli:<os user>`), refusals with their code; `GET /api/v1/activity` and
`flowdeck activity` filter as the page does."""

from __future__ import annotations

import getpass
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient

from flowdeck.console import activity, demo, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import Activity, create_token
from flowdeck.engine.engine import FlowEngine
from tests.console.test_activity import rows
from tests.console.test_views import _user, engine

__all__ = ["engine"]

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    # the cancel route answers `(status, body)`, which the newest django-ninja deprecates; the live API
    # tests never see it (the server runs in a subprocess), this in-process client does
    pytest.mark.filterwarnings("ignore:Returning tuple:DeprecationWarning"),
]


@pytest.fixture
async def api(engine: FlowEngine) -> Any:
    """An operator's bearer token, as headers for the async client."""
    token = await sync_to_async(lambda: create_token(_user("olga", True), "t"))()
    return {"headers": {"Authorization": f"Bearer {token}"}, "content_type": "application/json"}


async def _post(api: Any, path: str, body: Any = None) -> int:
    data = "" if body is None else json.dumps(body)
    return (await AsyncClient().post("/api/v1" + path, data, **api)).status_code


async def test_every_api_verb_is_recorded_with_its_outcome(engine: FlowEngine, api: Any) -> None:
    from examples.fulfilment import flows

    await demo.seed_parked(engine.store)
    await engine.register("fulfilment", flows.fulfilment)
    statuses = [
        await _post(api, "/workflows/counter/executions", {"executionId": "a-1"}),
        await _post(api, "/executions/a-1/signal/count", {"n": 0}),
        await _post(api, "/executions/a-1/signal/count", {"n": 2, "note": "private"}),
        await _post(api, "/executions/demo-parked/resume"),
        await _post(api, "/executions/demo-parked/resume", {"go": True}),
        await _post(api, "/executions/a-1/answer/double", {"value": 4}),
        await _post(api, "/executions/a-1/cancel", {"reason": "api"}),
        await _post(api, "/executions/a-1/end", {"reason": "by hand"}),
        await _post(api, "/executions/cancel", {"workflowId": "counter", "reason": "all"}),
    ]
    assert statuses == [200, 400, 200, 200, 200, 409, 202, 200, 200]
    assert await rows() == [
        ("olga", "api", "start", ["a-1"], "accepted", ""),
        ("olga", "api", "signal", ["a-1"], "invalid", "invalid_input"),
        ("olga", "api", "signal", ["a-1"], "accepted", ""),
        ("olga", "api", "resume:dry-run", ["demo-parked"], "accepted", ""),
        ("olga", "api", "resume:go", ["demo-parked"], "accepted", ""),
        ("olga", "api", "answer", ["a-1"], "refused", "not_stopped"),
        ("olga", "api", "cancel", ["a-1"], "accepted", ""),
        ("olga", "api", "end", ["a-1"], "accepted", ""),
        ("olga", "api", "bulk:cancel-all", [], "accepted", ""),
    ]
    signal = await Activity.objects.filter(action="signal", outcome="accepted").afirst()
    assert signal is not None
    assert signal.detail == {"input": "count", "size": len('{"n": 2, "note": "private"}')}
    assert "private" not in json.dumps([r.detail for r in await sync_to_async(list)(Activity.objects.all())])


async def test_an_api_cancel_of_an_ended_execution_is_recorded_as_such(engine: FlowEngine, api: Any) -> None:
    await engine.workflows.start("counter", execution_id="a-1")
    await engine.end("a-1", "gone", actor="t")
    assert await _post(api, "/executions/a-1/cancel", {"reason": "late"}) == 200
    row = await Activity.objects.aget(action="cancel")
    assert (row.outcome, row.detail) == ("already-terminal", {"reason": "late", "status": "failed:gone"})


async def test_the_api_lists_activity_with_filters_and_pages(engine: FlowEngine, api: Any) -> None:
    for eid in ("a-1", "a-2", "a-3"):
        await _post(api, "/workflows/counter/executions", {"executionId": eid})
    await _post(api, "/executions/a-2/cancel", {"reason": "x"})
    client = AsyncClient()

    async def get(query: str) -> Any:
        reply = await client.get("/api/v1/activity" + query, headers=api["headers"])
        return reply.status_code, reply.json()

    status, body = await get("?action=start&limit=2")
    assert (status, [i["executionIds"] for i in body["items"]]) == (200, [["a-3"], ["a-2"]])
    status, rest = await get(f"?action=start&limit=2&before={body['nextBefore']}")
    assert ([i["executionIds"] for i in rest["items"]], rest["nextBefore"]) == ([["a-1"]], None)
    status, on_a2 = await get("?executionId=a-2")
    assert [i["action"] for i in on_a2["items"]] == ["cancel", "start"]
    item = on_a2["items"][0]
    assert {k: item[k] for k in ("actor", "source", "outcome", "detail")} == {
        "actor": "olga",
        "source": "api",
        "outcome": "accepted",
        "detail": {"reason": "x"},
    }
    assert (await get("?user=nobody"))[1]["items"] == []
    assert (await get("?from=1h&source=api"))[1]["items"][0]["action"] == "cancel"
    assert (await get("?to=2000-01-01"))[1]["items"] == []
    status, refused = await get("?from=soon")  # outside the document's pattern: the parameter is named
    assert (status, refused["code"]) == (400, "invalid_request")
    assert [error["loc"][-1] for error in refused["detail"]] == ["from"]
    assert (await get("?source=fax"))[0] == 400
    assert (await get("?limit=0"))[0] == 400


async def test_the_api_refuses_anonymous_callers(engine: FlowEngine) -> None:
    reply = await AsyncClient().get("/api/v1/activity")
    assert (reply.status_code, reply.json()["code"]) == (401, "unauthenticated")


# -------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def served() -> Iterator[None]:
    """The CLI's engine serves the console tests' workflows (`counter`)."""
    discover(["tests.console.flows"])
    runtime.reset()
    yield
    runtime.reset()


def flow(*args: str) -> str:
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    runtime.reset()
    return out.getvalue()


def _seed_parked() -> None:
    from examples.fulfilment import flows

    async def seed() -> None:
        engine = await runtime.engine()
        await demo.seed_parked(engine.store)
        await engine.register("fulfilment", flows.fulfilment)
        runtime.reset()

    async_to_sync(seed)()


def test_every_cli_verb_is_recorded_as_the_os_user_or_as_given(served: None) -> None:
    me = f"cli:{getpass.getuser()}"
    flow("start", "counter", "--id", "k-1")
    flow("signal", "k-1", "count", '{"n": 2}', "--as", "ops-bob")
    with pytest.raises(CommandError):
        flow("signal", "k-1", "count", "{not json")
    _seed_parked()
    flow("resume", "demo-parked")
    flow("--as", "ada", "resume", "demo-parked", "--go")
    with pytest.raises(CommandError):
        flow("answer", "k-1", "double", "4")
    flow("cancel", "k-1", "tidy")
    flow("end", "k-1", "by hand", "--as", "ops-bob")
    with pytest.raises(CommandError):
        flow("cancel", "k-1")
    flow("cancel-all", "counter", "--reason", "all")
    assert async_to_sync(rows)() == [
        (me, "cli", "start", ["k-1"], "accepted", ""),
        ("ops-bob", "cli", "signal", ["k-1"], "accepted", ""),
        (me, "cli", "signal", ["k-1"], "invalid", "invalid_input"),
        (me, "cli", "resume:dry-run", ["demo-parked"], "accepted", ""),
        ("ada", "cli", "resume:go", ["demo-parked"], "accepted", ""),
        (me, "cli", "answer", ["k-1"], "refused", "not_stopped"),
        (me, "cli", "cancel", ["k-1"], "accepted", ""),
        ("ops-bob", "cli", "end", ["k-1"], "accepted", ""),
        (me, "cli", "cancel", ["k-1"], "already-terminal", ""),
        (me, "cli", "bulk:cancel-all", [], "accepted", ""),
    ]
    history = async_to_sync(_history_actors)("k-1")
    assert history == {me, "ops-bob"}  # the events carry the same names (cancel and end)


async def _history_actors(eid: str) -> set[str]:
    engine = await runtime.engine()
    events = (await engine.executions.history(eid, None)).events
    runtime.reset()
    return {str(e.data.get("actor")) for e in events if e.data.get("actor")}


def test_flow_activity_lists_and_filters(served: None) -> None:
    flow("start", "counter", "--id", "k-1", "--as", "ada")
    flow("start", "counter", "--id", "k-2")
    flow("cancel", "k-2", "--as", "ada")
    listed = json.loads(flow("activity", "--user", "ada", "--json"))
    assert [
        (i["action"], i["executionIds"] if "executionIds" in i else i["execution_ids"])
        for i in listed["items"]
    ] == [
        ("cancel", ["k-2"]),
        ("start", ["k-1"]),
    ]
    table = flow("activity", "--action", "start", "--since", "1h", "--limit", "1")
    lines = table.splitlines()
    assert lines[0].split() == ["ID", "AT", "USER", "SOURCE", "ACTION", "EXECUTION", "OUTCOME"]
    assert ("k-2" in lines[1], lines[-1].startswith("more: --before ")) == (True, True)
    older = flow("activity", "--action", "start", "--limit", "1", "--before", lines[-1].split()[-1])
    assert "k-1" in older.splitlines()[1]
    for bad in (("--since", "soon"), ("--source", "fax"), ("--limit", "0")):
        with pytest.raises(CommandError) as refused:
            flow("activity", *bad)
        assert refused.value.returncode == 2
    with pytest.raises(CommandError):
        flow("start", "counter", "--as", "")


def test_a_missing_os_user_is_still_attributed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_user() -> str:
        raise OSError("no user")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert activity.cli_actor() == "cli:unknown"
    assert activity.cli_actor("bob") == "bob"
