"""The executions list: filters in the wire vocabulary (and `parked`), a workflow filter, an id search, a
creation window, newest created or updated first, pages with the total, saved views, and cancelling a
selection with a reason.

The search box holds an id prefix and any `field:<name>.<json.path>=<value>` terms (a recorded value,
exactly); all of them and the filters narrow together.

The query lives in the URL (`?status=waiting:approval&workflow=fulfilment&q=demo-&sort=updated&
created_from=2026-12-01&created_to=2026-12-01&page=2`, `flowdeck.console.views.list_query`), so a link is
shareable and the back button works; htmx pushes it as the filters change. `?partial=rows` answers only
the table, which the page fetches again when its websocket hears of a change.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from flowdeck.console import activity, limits, runtime
from flowdeck.console.discovery import registered_flows
from flowdeck.console.views import common, parked, saved_views
from flowdeck.console.views.list_query import INSTANTS, PAGE_SIZE, PARKED, SORTS, Query
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, nodes, traversal
from flowdeck.engine import ids as ids_module
from flowdeck.engine.engine import declared_inputs
from flowdeck.engine.flow import Flow
from flowdeck.store import spi

__all__ = ["cancel_selected", "executions"]

_BASE_WORDS = (
    "running",
    "waiting",
    "sleeping",
    "retrying",
    "rate-limited",
    "queued",
    "cancelling",
    "compensating",
    "stopped",
    "completed",
    "failed",
    "cancelled",
)


def _children(flows: Iterable[Flow]) -> set[str]:
    """The names of the flows embedded as another's subflow: their inputs come from a mapper."""
    return {
        place.node.child.name
        for flow in flows
        for place in traversal.walk(flow)
        if isinstance(place.node, nodes.Subflow)
    }


def signalable_inputs() -> list[str]:
    """The inputs a person can signal: those the served flows declare, less those of a flow that is
    another's subflow (a parent's mapper supplies them, so nobody waits on them by that name)."""
    flows = registered_flows()
    children = _children(flows.values())
    return sorted({n for wid, f in flows.items() if wid not in children for n in declared_inputs(f)})


async def status_choices(store: spi.FlowStore) -> list[str]:
    """Every filter word: the base words, `parked`, `failed:<kind>` for the kinds in the data,
    `waiting:<name>` for the inputs a person can signal."""
    words = [*_BASE_WORDS, PARKED]
    words += [f"failed:{kind}" for kind in await store.failure_kinds()]
    words += [f"waiting:{name}" for name in signalable_inputs()]
    return words


async def _table(query: Query) -> dict[str, object]:
    engine = await runtime.reader()
    served = parked.served_hashes(await engine.workflows.list())
    now = engine.store.now()
    error = ""
    try:
        result = await query.search(engine, served, PAGE_SIZE, (query.page - 1) * PAGE_SIZE)
        queues = await limits.queues_for(engine.store, result.items, served)
        rows = [common.row_of(s, served, now, queues.get(s.execution_id)) for s in result.items]
        total = result.total
    except spi.FilterParseError as problem:
        rows, total, error = [], 0, str(problem)
    pages = max(1, -(-total // PAGE_SIZE))
    return {
        "rows": rows,
        "total": total,
        "query": query,
        "now": now,
        "pages": pages,
        "error": error,
        "first": (query.page - 1) * PAGE_SIZE + 1 if rows else 0,
        "last": (query.page - 1) * PAGE_SIZE + len(rows),
        "previous_url": query.url(page=query.page - 1) if query.page > 1 else "",
        "next_url": query.url(page=query.page + 1) if query.page < pages else "",
        "sort_urls": {word: query.url(sort=word, page=1) for word in SORTS},
    }


@login_required
@require_GET
async def executions(request: HttpRequest) -> HttpResponse:
    query = Query.of(request)
    table = await _table(query)
    if request.GET.get("partial") == "rows" or request.headers.get("HX-Request"):
        context = {**table, **(await common.replica_context())}
        return await common.fragment(request, "flowdeck/console/partials/executions_table.html", context)
    engine = await runtime.reader()
    context = {
        **table,
        **(await common.replica_context()),
        "nav": "executions",
        "status_choices": await status_choices(engine.store),
        "workflows": sorted(info.id for info in await engine.workflows.list()),
        "can_operate": await common.can_operate(request),
        "saved_views": await saved_views.views_of(request, query.url(page=1)),
        "sorts": list(SORTS),
        "unbounded_url": query.url(**dict.fromkeys(INSTANTS), page=1),
    }
    return await common.page(request, "flowdeck/console/executions.html", context)


@login_required
@require_POST
async def cancel_selected(request: HttpRequest) -> HttpResponse:
    """Ask each selected execution to cancel with one reason; says what each ask did."""
    if not await common.can_operate(request):
        return await common.forbidden(request)
    ids = [i for i in request.POST.getlist("ids") if i]
    engine = await runtime.engine()
    reason = request.POST.get("reason", "").strip()
    actor = str((await request.auser()).get_username())
    async with activity.recording(actor, "console", "bulk:cancel", execution_ids=ids, reason=reason) as act:
        for eid in ids:  # refuse them all, asking none, when one id breaks the rule and names nothing
            if ids_module.id_problem(eid) is not None:
                await common.described(engine, eid)
        if not ids:
            act.settle("invalid", "nothing_selected", "Select at least one execution.")
            return await common.fragment(
                request,
                "flowdeck/console/partials/message.html",
                {"level": "error", "text": act.message},
                status=400,
            )
        outcomes, words = [], {}
        for eid in ids:
            try:
                outcome = await engine.executions.cancel(eid, reason, actor=actor)
            except errors.FlowExecutionNotFound:  # gone (purged) since the list showed it: asked nothing
                outcomes.append((eid, "no such execution"))
                words[eid] = activity.outcome_of(errors.FlowExecutionNotFound(eid))[0]
                continue
            outcomes.append((eid, _outcome_words(outcome)))
            words[eid] = act.cancel_outcome(outcome)
        act.bulk(words)
    return await common.fragment(
        request, "flowdeck/console/partials/cancel_outcomes.html", {"outcomes": outcomes}
    )


def _outcome_words(outcome: spi.CancelOutcome) -> str:
    match outcome:
        case spi.Accepted():
            return "cancel requested"
        case spi.AlreadyRequested():
            return "already requested"
        case spi.AlreadyTerminal(status):
            return f"already ended ({status.show()})"
    return "?"
