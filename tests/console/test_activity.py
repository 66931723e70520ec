"""The activity record from the console's forms: every verb writes one row with who, what, on which
executions and the outcome, refusals with their code; the page filters, pages, escapes and needs a login."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from flowdeck.console import activity, demo
from flowdeck.console.models import Activity, ActivityExecution
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import engine, operator, viewer

__all__ = ["engine", "operator", "viewer"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HTMX = {"headers": {"HX-Request": "true"}}


def _rows() -> list[tuple[Any, ...]]:
    return [
        (r.actor, r.source, r.action, activity.execution_ids(r), r.outcome, r.code)
        for r in Activity.objects.order_by("pk").prefetch_related("targets")
    ]


rows = sync_to_async(_rows)


async def _last() -> Activity:
    return await Activity.objects.order_by("-pk").afirst()  # type: ignore[return-value]


async def test_start_signal_and_cancel_from_the_forms_are_recorded(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    started = await operator.post("/workflows/counter/start/", {"execution_id": "c-1"}, **HTMX)
    signalled = await operator.post("/executions/c-1/signal/", {"input_name": "count", "n": "3"}, **HTMX)
    cancelled = await operator.post("/executions/c-1/cancel/", {"reason": "not needed"}, **HTMX)
    again = await operator.post("/executions/c-1/cancel/", {"reason": "twice"}, **HTMX)
    assert [r.status_code for r in (started, signalled, cancelled, again)] == [200, 200, 200, 200]
    assert await rows() == [
        ("olga", "console", "start", ["c-1"], "accepted", ""),
        ("olga", "console", "signal", ["c-1"], "accepted", ""),
        ("olga", "console", "cancel", ["c-1"], "accepted", ""),
        ("olga", "console", "cancel", ["c-1"], "already-requested", ""),
    ]
    signal = await Activity.objects.aget(action="signal")
    assert signal.detail == {"input": "count", "size": len('{"n":3}')}  # the name, never the value
    assert (await _last()).detail == {"reason": "twice"}


async def test_a_refused_signal_and_a_bad_value_are_recorded_with_their_reason(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    bad = await operator.post("/executions/c-1/signal/", {"input_name": "count", "n": "0"}, **HTMX)
    undeclared = await operator.post("/executions/c-1/signal/", {"input_name": "nope"}, **HTMX)
    await engine.executions.cancel("c-1", "", actor="t")
    missing = await operator.post("/executions/ghost/signal/", {"input_name": "count", "n": "1"}, **HTMX)
    assert [r.status_code for r in (bad, undeclared, missing)] == [400, 400, 404]
    assert await rows() == [
        ("olga", "console", "signal", ["c-1"], "invalid", "invalid_input"),
        ("olga", "console", "signal", ["c-1"], "invalid", "input_not_declared"),
        ("olga", "console", "signal", ["ghost"], "invalid", "not_found"),
    ]


async def test_resume_answer_and_end_are_recorded_refusals_included(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    from examples.fulfilment import flows

    await engine.workflows.start("counter", execution_id="c-1")
    await demo.seed_parked(engine.store)
    await engine.register("fulfilment", flows.fulfilment)
    dry = await operator.post("/executions/demo-parked/resume/", {}, **HTMX)
    go = await operator.post("/executions/demo-parked/resume/", {"go": "1"}, **HTMX)
    answered = await operator.post("/executions/c-1/answer/", {"node": "double", "value": "4"}, **HTMX)
    unreason = await operator.post("/executions/c-1/end/", {"reason": ""}, **HTMX)
    ended = await operator.post("/executions/c-1/end/", {"reason": "fixed by hand"}, **HTMX)
    terminal = await operator.post("/executions/c-1/resume/", {"go": "1"}, **HTMX)
    assert [r.status_code for r in (dry, go, answered, unreason, ended, terminal)] == [
        200,
        200,
        409,
        400,
        200,
        409,
    ]
    assert await rows() == [
        ("olga", "console", "resume:dry-run", ["demo-parked"], "accepted", ""),
        ("olga", "console", "resume:go", ["demo-parked"], "accepted", ""),
        ("olga", "console", "answer", ["c-1"], "refused", "not_stopped"),
        ("olga", "console", "end", ["c-1"], "invalid", "reason_required"),
        ("olga", "console", "end", ["c-1"], "accepted", ""),
        ("olga", "console", "resume:go", ["c-1"], "refused", "execution_terminal"),
    ]
    dry_row = await Activity.objects.aget(action="resume:dry-run")
    assert set(dry_row.detail) == {"kept", "next_node", "conflicts"}
    answer_row = await Activity.objects.aget(action="answer")
    assert (answer_row.detail, "stopped" in answer_row.message) == ({"node": "double", "size": 1}, True)


async def test_a_bulk_cancel_is_one_row_naming_each_execution(
    engine: FlowEngine, operator: AsyncClient
) -> None:
    for eid in ("c-1", "c-2"):
        await engine.workflows.start("counter", execution_id=eid)
    await engine.executions.cancel("c-2", "", actor="t")
    await operator.post("/executions/cancel/", {"ids": ["c-1", "c-2"], "reason": "batch"}, **HTMX)
    await operator.post("/executions/cancel/", {"reason": "nothing"}, **HTMX)
    assert await rows() == [
        ("olga", "console", "bulk:cancel", ["c-1", "c-2"], "accepted", ""),
        ("olga", "console", "bulk:cancel", [], "invalid", "nothing_selected"),
    ]
    bulk = await Activity.objects.aget(code="")
    assert bulk.detail == {"reason": "batch", "outcomes": {"c-1": "accepted", "c-2": "already-requested"}}
    # done in the request, it keeps no progress: no operation page to link to, nor one answering its id
    assert "operation-link" not in (await operator.get("/activity/")).content.decode()
    assert (await operator.get(f"/executions/bulk/{bulk.pk}/")).status_code == 404


async def test_a_refused_permission_is_not_an_action(engine: FlowEngine, viewer: AsyncClient) -> None:
    """A viewer's post never reached the verb: the 403 is the answer, and nothing is recorded."""
    await engine.workflows.start("counter", execution_id="c-1")
    assert (await viewer.post("/executions/c-1/cancel/", {"reason": "no"})).status_code == 403
    assert await rows() == []


async def test_a_failed_write_leaves_the_verbs_answer_alone(
    engine: FlowEngine, operator: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    act = activity.Act("olga", "console", "cancel", ["c-1"], detail={"not json": object()})
    with caplog.at_level("ERROR", logger="flowdeck.console.activity"):
        await activity._write(act)
    assert (await Activity.objects.acount(), "could not record cancel by olga" in caplog.text) == (0, True)


# ------------------------------------------------------------------------------------------- page


def _make(n: int, **fields: Any) -> list[Activity]:
    made = []
    base = {"actor": "olga", "source": "console", "action": "cancel", "outcome": "accepted"}
    for i in range(n):
        row = Activity.objects.create(
            **(base | fields | {"at": fields.get("at", timezone.now()) + timedelta(seconds=i)})
        )
        ActivityExecution.objects.create(activity=row, execution_id=f"e-{i}")
        made.append(row)
    return made


make = sync_to_async(_make)


def _shown(html: str) -> list[str]:
    return re.findall(r'data-activity-id="(\d+)"', html)


async def test_the_page_needs_a_login(engine: FlowEngine) -> None:
    reply = await AsyncClient().get("/activity/")
    assert (reply.status_code, reply["Location"].split("?")[0]) == (302, "/login/")


async def test_the_page_is_for_viewers_too_and_linked_from_the_navigation(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    (row,) = await make(1)
    html = (await viewer.get("/activity/")).content.decode()
    assert 'href="/activity/" class="active">Activity</a>' in html
    assert _shown(html) == [str(row.pk)]
    assert 'href="/executions/e-0"' in html
    home = (await viewer.get("/executions/")).content.decode()
    assert 'href="/activity/" >Activity</a>' in home or 'href="/activity/">Activity</a>' in home


async def test_the_page_filters_by_user_action_source_execution_and_time(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    now = timezone.now()
    old = await make(1, actor="ana", at=now - timedelta(days=3))
    cli = await make(1, actor="cli:ops", source="cli", action="resume:go", at=now - timedelta(hours=1))
    api = await make(2, actor="bot", source="api", action="signal", at=now - timedelta(minutes=5))

    async def ids(query: str) -> list[str]:
        reply = await viewer.get("/activity/" + query)
        assert reply.status_code == 200, query
        return _shown(reply.content.decode())

    newest_first = [str(r.pk) for r in (*reversed(api), *cli, *old)]
    assert await ids("") == newest_first
    assert await ids("?user=ana") == [str(old[0].pk)]
    assert await ids("?action=resume") == [str(cli[0].pk)]  # `resume` takes both kinds
    assert await ids("?action=signal&source=api") == [str(r.pk) for r in reversed(api)]
    assert await ids("?source=cli") == [str(cli[0].pk)]
    assert await ids("?execution=e-1") == [str(api[1].pk)]
    assert await ids("?from=2d") == [str(r.pk) for r in (*reversed(api), *cli)]
    until = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    assert await ids(f"?to={until}") == [str(old[0].pk)]
    refused = await viewer.get("/activity/?from=yesterday")
    assert (refused.status_code, "is not a time" in refused.content.decode()) == (400, True)
    assert (await viewer.get("/activity/?source=fax")).status_code == 400


async def test_the_page_pages_by_keyset_newest_first(engine: FlowEngine, viewer: AsyncClient) -> None:
    made = await make(activity.PAGE_SIZE + 3)
    first = (await viewer.get("/activity/?user=olga")).content.decode()
    assert _shown(first) == [str(r.pk) for r in reversed(made)][: activity.PAGE_SIZE]
    older = re.search(r'href="(\?[^"]+)" id="activity-older"', first)
    assert older is not None
    second = (await viewer.get("/activity/" + older.group(1).replace("&amp;", "&"))).content.decode()
    assert _shown(second) == [str(r.pk) for r in reversed(made[:3])]
    assert ('id="activity-older"' in second, 'id="activity-newest"' in second) == (False, True)


async def test_the_page_escapes_what_people_typed(engine: FlowEngine, operator: AsyncClient) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    await operator.post("/executions/c-1/cancel/", {"reason": "<script>alert(1)</script>"}, **HTMX)
    await make(1, actor="<b>mallory</b>", message="<img src=x onerror=alert(2)>")
    html = (await operator.get("/activity/")).content.decode()
    assert "reason: &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert ("&lt;b&gt;mallory&lt;/b&gt;" in html, "&lt;img src=x" in html) == (True, True)
    assert [bad in html for bad in ("<script>alert", "<b>mallory", "<img src=x")] == [False, False, False]


def test_outcomes_name_the_refusal_as_the_api_does() -> None:
    import asyncio

    from flowdeck.console.api.errors import ApiError
    from flowdeck.engine import errors

    assert [
        activity.outcome_of(errors.FlowNotStopped("e", "running")),
        activity.outcome_of(errors.FlowExecutionNotFound("e")),
        activity.outcome_of(ApiError(400, "malformed_body", "not JSON")),
        activity.outcome_of(asyncio.CancelledError()),
        activity.outcome_of(RuntimeError("boom")),
    ] == [
        ("refused", "not_stopped"),
        ("invalid", "execution_not_found"),
        ("invalid", "malformed_body"),
        ("error", "interrupted"),
        ("error", "internal_error"),
    ]
