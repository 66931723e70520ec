"""Bulk operations by query in the console: from any filter of the executions list, "Act on all N
matching" → a confirmation (the filter in words, the count, the cap) → the operation's page, with its
progress and each execution's outcome. A resume is a dry run first: its page sums up which executions would
resume cleanly and which would stop with F0101 or F0102, and offers to resume the clean ones.

The confirmation carries the count it showed; when the filter matches another number by the time the
operator confirms, nothing is done and the page says so (confirm again). With no filter at all, the
operator also ticks "every execution" (`all`), or nothing is done. See `console.bulk` for the operation
itself. Everything here but reading an operation needs the operate permission.
"""

from __future__ import annotations

from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from flowdeck.console import bulk, refusals, runtime
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required
from flowdeck.store import spi

__all__ = ["again", "confirm", "go", "operation", "operation_progress", "submit"]

VERBS = {"cancel": "Cancel", "resume": "Resume", "end": "End"}


def _where(params: object) -> bulk.Where:
    """The filter of a request, checked as the list checks it (`refusals.Refused` for one it cannot be)."""
    get = params.get  # type: ignore[attr-defined]
    where = bulk.Where(
        get("status", "").strip(),
        refusals.check_filter("workflow", get("workflow", "").strip()),
        get("q", "").strip(),
    )
    try:
        where.parsed()
    except spi.FilterParseError as problem:
        raise refusals.Refused("filter", str(problem)) from None
    return where


def _verb(params: object) -> str:
    verb = params.get("action", "cancel")  # type: ignore[attr-defined]
    if verb not in VERBS:
        raise refusals.Refused("action", f"must be one of {', '.join(VERBS)} (got {verb[:40]!r})")
    return verb


def _operation_url(op_id: int) -> str:
    return reverse("flowdeck:console-bulk-operation", args=[op_id])


@login_required
@require_GET
async def confirm(request: HttpRequest) -> HttpResponse:
    """What the operation would act on: the filter in words and how many executions match it now."""
    if not await common.can_operate(request):
        return await common.forbidden(request)
    where, verb = _where(request.GET), _verb(request.GET)
    engine = await runtime.engine()
    matched = await bulk.count(engine, where)
    # An end takes stopped executions only: the count it offers is theirs, not everything matched.
    endable = await bulk.count(engine, where, endable=True) if verb == "end" else matched
    query = urlencode({k: v for k, v in where.as_json().items() if v})
    context = {
        "nav": "executions",
        "where": where,
        "words": where.words(),
        "verb": verb,
        "verbs": [
            (v, label, f"?{query}&action={v}" if query else f"?action={v}") for v, label in VERBS.items()
        ],
        "matched": matched,
        "endable": endable,
        "acting_on": min(endable, bulk.CAP),
        "cap": bulk.CAP,
        "list_url": reverse("flowdeck:console-executions") + (f"?{query}" if query else ""),
    }
    return await common.page(request, "flowdeck/console/bulk_confirm.html", context)


@login_required
@require_POST
async def submit(request: HttpRequest) -> HttpResponse:
    """Take the ids matching now and start the operation on them, unless their number is not the one the
    operator confirmed (409, nothing done)."""
    if not await common.can_operate(request):
        return await common.forbidden(request)
    where, verb = _where(request.POST), _verb(request.POST)
    confirmed = refusals.whole_number(request.POST, "confirmed", -1, minimum=0, maximum=refusals.MAX_OFFSET)
    try:
        everything = request.POST.get("all", "") == "1"
        bulk.check_everything(where, everything, None if confirmed < 0 else confirmed)
    except bulk.EverythingRefused as refused:
        raise refusals.Refused(refused.what, str(refused)) from None
    engine = await runtime.engine()
    ids, matched = await bulk.snapshot(engine, where, endable=verb == "end")
    if confirmed != min(matched, bulk.CAP):
        what = "stopped executions (what an end takes)" if verb == "end" else "executions"
        text = (
            f"The filter matches {matched} {what} now, not the {confirmed} you confirmed: nothing was "
            + "done. Look again and confirm."
        )
        query = urlencode({**{k: v for k, v in where.as_json().items() if v}, "action": verb})
        context = {
            "nav": "executions",
            "text": text,
            "again_url": reverse("flowdeck:console-bulk") + "?" + query,
        }
        return await common.page(request, "flowdeck/console/bulk_changed.html", context, status=409)
    reason = request.POST.get("reason", "").strip()[:500]
    if verb == "end" and not reason:
        reason = "ended by an operator"
    actor = str((await request.auser()).get_username())
    op_id = await bulk.create(actor, "console", verb, ids, where=where, matched=matched, reason=reason)
    await bulk.launch(engine, op_id, len(ids))
    return HttpResponseRedirect(_operation_url(op_id), status=303)


async def _follow(request: HttpRequest, op_id: int, verb: str, ids: list[str], reason: str) -> HttpResponse:
    actor = str((await request.auser()).get_username())
    new_id = await bulk.create(actor, "console", verb, ids, reason=reason, origin=op_id)
    await bulk.launch(await runtime.engine(), new_id, len(ids))
    return HttpResponseRedirect(_operation_url(new_id), status=303)


async def _not_found(request: HttpRequest, op_id: int) -> HttpResponse:
    """The styled 404, rendered here: Django renders a raised Http404 of an async view on a thread of its
    own, whose database connection (the user's session, for the page) nobody closes."""
    return await sync_to_async(refusals.not_found)(request, Http404(f"no bulk operation {op_id}"))


@login_required
@require_POST
async def go(request: HttpRequest, op_id: int) -> HttpResponse:
    """Resume for real the executions a dry run found clean (each is dry-run again as it resumes)."""
    if not await common.can_operate(request):
        return await common.forbidden(request)
    op = await bulk.load(op_id)
    if op is None:
        return await _not_found(request, op_id)
    if op.verb != "resume" or op.state != "done":
        raise refusals.Refused("operation", f"{op_id} is not a finished dry run")
    return await _follow(request, op_id, "resume:go", op.summary()["clean"], "")


@login_required
@require_POST
async def again(request: HttpRequest, op_id: int) -> HttpResponse:
    """Run the same operation on the same executions again: each verb is idempotent, so only what did
    not happen the first time (an interrupted run's rest) happens now."""
    if not await common.can_operate(request):
        return await common.forbidden(request)
    op = await bulk.load(op_id)
    if op is None:
        return await _not_found(request, op_id)
    if op.state == "running":
        raise refusals.Refused("operation", f"{op_id} is still running")
    return await _follow(request, op_id, op.verb, op.ids, str(op.detail.get("reason", "")))


def _context(op: bulk.Operation) -> dict[str, object]:
    codes, why = op.detail.get("codes", {}), op.detail.get("why", {})
    rows = [(eid, op.outcomes.get(eid, ""), codes.get(eid, ""), why.get(eid, "")) for eid in op.ids]
    summary = op.summary() if op.verb == "resume" else {}
    return {
        "nav": "executions",
        "op": op,
        "rows": rows,
        "counts": sorted(op.counts().items()),
        "summary": [
            (key, summary[key])
            for key in ("clean", bulk.STOPS_AGAIN, "F0101", "F0102", "not_resumable", "other")
            if key in summary
        ],
        "clean": len(summary.get("clean", [])),
        "progress_url": reverse("flowdeck:console-bulk-progress", args=[op.id]),
    }


@login_required
@require_GET
async def operation(request: HttpRequest, op_id: int) -> HttpResponse:
    op = await bulk.load(op_id)
    if op is None:
        return await _not_found(request, op_id)
    context = {**_context(op), "can_operate": await common.can_operate(request)}
    return await common.page(request, "flowdeck/console/bulk_operation.html", context)


@login_required
@require_GET
async def operation_progress(request: HttpRequest, op_id: int) -> HttpResponse:
    """The progress block, which a running operation's page fetches every second."""
    op = await bulk.load(op_id)
    if op is None:
        return await _not_found(request, op_id)
    context = {**_context(op), "can_operate": await common.can_operate(request)}
    return await common.fragment(request, "flowdeck/console/partials/bulk_progress.html", context)
