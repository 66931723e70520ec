"""Bulk operations by query from the console and the CLI (in-process, the real store: SQLite by default,
PostgreSQL with DATABASE_URL): the link on the list, the confirmation (the filter in words, the count),
the dry run's summary and go, the operation's page, a count that changed, reruns, refusals."""

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

from flowdeck.console import bulk, runtime
from flowdeck.console.models import Activity
from tests.console.test_bulk import _close_thread_connections, parked_mix, served
from tests.console.test_views import _user

__all__ = ["_close_thread_connections", "served"]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


async def client(operator: bool = True) -> AsyncClient:
    c = AsyncClient()
    await c.aforce_login(await sync_to_async(_user)("olga" if operator else "victor", operator))
    return c


def _op_id(location: str) -> int:
    found = re.fullmatch(r"/executions/bulk/([0-9]+)/", location)
    assert found, location
    return int(found[1])


async def test_the_list_links_to_the_confirmation_which_cancels_all_matching(served: None) -> None:
    engine = await runtime.engine()
    for eid in ("c-1", "c-2", "x-1"):
        await engine.workflows.start("counter", execution_id=eid)
    olga = await client()
    listing = (await olga.get("/executions/?workflow=counter&q=c-")).content.decode()
    assert 'href="/executions/bulk/?workflow=counter&amp;q=c-"' in listing
    assert "Act on all 2 matching" in listing
    page = (await olga.get("/executions/bulk/?workflow=counter&q=c-&action=cancel")).content.decode()
    assert "status is" not in page
    assert "any status, workflow is counter, id starts with c-" in page
    assert "<b>2</b> executions" in page
    assert 'name="confirmed" value="2"' in page
    form = {"workflow": "counter", "q": "c-", "action": "cancel", "confirmed": "2", "reason": "<tidy>"}
    reply = await olga.post("/executions/bulk/run/", form)
    assert reply.status_code == 303
    op_id = _op_id(reply["Location"])
    shown = (await olga.get(reply["Location"])).content.decode()
    assert "2 of 2" in shown
    assert "accepted: 2" in shown
    assert "&lt;tidy&gt;" in shown
    assert "<tidy>" not in shown
    assert [(await engine.store.get_execution(e)).cancel_requested for e in ("c-1", "x-1")] == [True, False]
    record = (await olga.get("/activity/?action=bulk")).content.decode()
    assert "2 accepted · reason: &lt;tidy&gt;" in record
    assert f'<a href="/executions/bulk/{op_id}/" class="operation-link"' in record  # the row opens its page
    again = await olga.post(f"/executions/bulk/{op_id}/again/")
    rerun = await bulk.load(_op_id(again["Location"]))
    assert rerun is not None
    assert (rerun.counts(), rerun.detail["reason"], rerun.detail["origin"]) == (
        {"already-requested": 2},
        "<tidy>",
        op_id,
    )


async def test_the_console_dry_run_sums_up_and_go_resumes_the_clean_ones(served: None) -> None:
    await parked_mix()
    olga = await client()
    page = (await olga.get("/executions/bulk/?workflow=versioned&q=p-&action=resume")).content.decode()
    assert "Dry run on 4 executions" in page
    reply = await olga.post(
        "/executions/bulk/run/", {"workflow": "versioned", "q": "p-", "action": "resume", "confirmed": "4"}
    )
    dry_url = reply["Location"]
    shown = (await olga.get(dry_url)).content.decode()
    summary = shown.split('id="bulk-summary"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr class="sum-([A-Za-z0-9]+)">.*?<td class="num">([0-9]+)</td>', summary, re.S)
    assert rows == [("clean", "2"), ("F0101", "1"), ("F0102", "1"), ("other", "0")]
    assert "Resume the 2 clean executions" in shown
    go = await olga.post(dry_url + "go/")
    op = await bulk.load(_op_id(go["Location"]))
    assert op is not None
    assert (op.action, sorted(op.outcomes.items())) == (
        "bulk:resume:go",
        [("p-clean-1", "accepted"), ("p-clean-2", "accepted")],
    )


async def test_a_changed_count_a_bad_filter_and_a_viewer_are_refused(served: None) -> None:
    engine = await runtime.engine()
    await engine.workflows.start("counter", execution_id="c-1")
    olga = await client()
    changed = await olga.post("/executions/bulk/run/", {"q": "c-", "action": "cancel", "confirmed": "5"})
    assert changed.status_code == 409
    assert "matches 1 executions now, not the 5 you confirmed" in changed.content.decode()
    assert not await Activity.objects.filter(action="bulk:cancel").aexists()
    bad = await olga.get("/executions/bulk/?status=sideways")
    assert bad.status_code == 400
    assert "Refused" in bad.content.decode()
    assert "<!doctype html>" in bad.content.decode()
    assert (await olga.get("/executions/bulk/?q=field:nope")).status_code == 400
    assert (await olga.get("/executions/bulk/?action=explode")).status_code == 400
    nothing = (await olga.get("/executions/bulk/?q=none-")).content.decode()
    assert "Nothing matches this filter" in nothing
    assert 'id="bulk-form"' not in nothing
    assert (await olga.get("/executions/bulk/999/")).status_code == 404
    anonymous = AsyncClient()
    assert (await anonymous.get("/executions/bulk/?q=c-")).status_code == 302
    assert (await anonymous.post("/executions/bulk/run/", {"q": "c-", "confirmed": "1"})).status_code == 302
    assert (await anonymous.get("/executions/bulk/1/")).status_code == 302
    victor = await client(operator=False)
    assert "Act on all" not in (await victor.get("/executions/")).content.decode()
    assert (await victor.get("/executions/bulk/?q=c-")).status_code == 403
    assert (
        await victor.post("/executions/bulk/run/", {"q": "c-", "action": "cancel", "confirmed": "1"})
    ).status_code == 403
    assert not (await engine.store.get_execution("c-1")).cancel_requested


async def test_a_filter_matching_nothing_runs_as_an_empty_operation(served: None) -> None:
    olga = await client()
    reply = await olga.post("/executions/bulk/run/", {"q": "none-", "action": "end", "confirmed": "0"})
    shown = (await olga.get(reply["Location"])).content.decode()
    assert "0 of 0" in shown
    assert "No execution matched: nothing was done." in shown


async def test_acting_on_every_execution_needs_the_every_box_ticked(served: None) -> None:
    """With no filter the confirmation asks the operator to tick "every execution" (`all`), and the run
    refuses without it (issue 27, item 6): a styled 400, nothing recorded, nothing cancelled."""
    engine = await runtime.engine()
    for eid in ("c-1", "c-2"):
        await engine.workflows.start("counter", execution_id=eid)
    olga = await client()
    page = (await olga.get("/executions/bulk/?action=cancel")).content.decode()
    assert 'name="all" value="1" required id="bulk-all"' in page
    assert 'id="bulk-all"' not in (await olga.get("/executions/bulk/?action=cancel&q=c-")).content.decode()
    refused = await olga.post("/executions/bulk/run/", {"action": "cancel", "confirmed": "2"})
    said = refused.content.decode()
    assert (refused.status_code, "to act on every execution, say all" in said, "<!doctype html>" in said) == (
        400,
        True,
        True,
    )
    form = {"action": "cancel", "confirmed": "2", "all": "1", "q": "c-"}
    assert (await olga.post("/executions/bulk/run/", form)).status_code == 400  # all with a filter
    assert not await Activity.objects.filter(action__startswith="bulk").aexists()
    assert not (await engine.store.get_execution("c-1")).cancel_requested
    reply = await olga.post("/executions/bulk/run/", {"action": "cancel", "confirmed": "2", "all": "1"})
    assert reply.status_code == 303
    assert [(await engine.store.get_execution(e)).cancel_requested for e in ("c-1", "c-2")] == [True, True]


# -------------------------------------------------------------------------------------------- CLI


def flow(*args: str) -> str:
    out = io.StringIO()
    call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    runtime.reset()
    return out.getvalue()


def _start(*eids: str) -> None:
    async def go() -> None:
        engine = await runtime.engine()
        for eid in eids:
            await engine.workflows.start("counter", execution_id=eid)
        runtime.reset()

    async_to_sync(go)()


def test_flow_cancel_and_end_where_act_on_the_matches_and_rerun_safely(served: None) -> None:
    _start("k-1", "k-2", "z-1")
    text = flow("cancel", "--where", "running", "--prefix", "k-", "--reason", "tidy")
    assert "bulk:cancel" in text
    assert "2 of 2" in text
    assert "accepted: 2" in text
    again = json.loads(flow("cancel", "--where", "running", "--prefix", "k-", "--json"))
    assert (again["counts"], again["filter_words"]) == (
        {"already-requested": 2},
        "status is running, any workflow, id starts with k-",
    )
    ended = json.loads(flow("end", "--where", "field:nothing.here=1", "--json"))
    assert (ended["total"], ended["outcomes"]) == (0, {})


def test_flow_resume_where_dry_runs_then_goes(served: None) -> None:
    async_to_sync(parked_mix)()
    runtime.reset()
    dry = flow("resume", "--workflow", "versioned", "--prefix", "p-")
    assert "dry run" in dry
    assert "clean: 2" in dry
    assert "F0101: 1 (p-f0101)" in dry
    assert "F0102: 1 (p-f0102)" in dry
    go = json.loads(flow("resume", "--workflow", "versioned", "--prefix", "p-", "--go", "--json"))
    assert go["counts"] == {"accepted": 2, "refused": 2}
    assert go["codes"] == {"p-f0101": "resume_conflict", "p-f0102": "resume_conflict"}


@pytest.mark.parametrize(
    "args",
    [
        ("cancel", "--where", "sideways"),
        ("cancel", "--where", "field:nope"),
        ("cancel", "k-1", "--where", "running"),
        ("resume",),
        ("end", "--workflow", "nosuch"),
    ],
)
def test_flow_bulk_bad_input_exits_2(served: None, args: Any) -> None:
    with pytest.raises(CommandError) as refused:
        flow(*args)
    assert refused.value.returncode == 2


async def test_a_running_operation_page_polls_its_progress_and_a_finished_one_does_not(served: None) -> None:
    engine = await runtime.engine()
    await engine.workflows.start("counter", execution_id="r-1")
    op_id = await bulk.create("olga", "console", "cancel", ["r-1"])
    olga = await client()
    running = (await olga.get(f"/executions/bulk/{op_id}/")).content.decode()
    assert f'hx-get="/executions/bulk/{op_id}/progress/" hx-trigger="every 1s"' in running
    assert "0 of 1" in running
    assert 'id="bulk-again"' not in running  # not while it runs
    await bulk.run(engine, op_id)
    done = (await olga.get(f"/executions/bulk/{op_id}/progress/")).content.decode()
    assert "hx-trigger" not in done
    assert "1 of 1" in done
    assert 'id="bulk-again"' in done
