"""The executions list: filters in the wire vocabulary, a workflow filter, an id search, pages with the
total, and cancelling a selection with a reason.

The search box holds an id prefix and any `field:<name>.<json.path>=<value>` terms (a recorded value,
exactly); all of them and the filters narrow together.

The query lives in the URL (`?status=waiting:approval&workflow=fulfilment&q=demo-&page=2`), so a link is
shareable and the back button works; htmx pushes it as the filters change. `?partial=rows` answers only
the table, which the page fetches again when its websocket hears of a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from console import activity, refusals, runtime
from console.discovery import registered_flows
from console.views import common
from engine import ids as ids_module
from engine.engine import declared_inputs
from store import field_terms, spi

__all__ = ["cancel_selected", "executions"]

PAGE_SIZE = 25
MAX_PAGE = refusals.MAX_OFFSET // PAGE_SIZE + 1  # the last page whose offset a database takes
_BASE_WORDS = (
    "running",
    "waiting",
    "sleeping",
    "retrying",
    "cancelling",
    "compensating",
    "stopped",
    "completed",
    "failed",
    "cancelled",
)


@dataclass(frozen=True)
class Query:
    status: str
    workflow: str
    q: str
    page: int

    @classmethod
    def of(cls, request: HttpRequest) -> Query:
        """The query of the request; `refusals.Refused` for a page number or an id filter it cannot be."""
        params = request.GET
        return cls(
            params.get("status", "").strip(),
            refusals.check_filter("workflow", params.get("workflow", "").strip()),
            _checked_search(params.get("q", "").strip()),
            refusals.whole_number(params, "page", 1, minimum=1, maximum=MAX_PAGE),
        )

    def url(self, **change: object) -> str:
        values = {"status": self.status, "workflow": self.workflow, "q": self.q, "page": self.page}
        values.update(change)
        kept = {k: v for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)}
        return "?" + urlencode(kept) if kept else "?"


def _checked_search(q: str) -> str:
    """The search box: its id-prefix word keeps the id rule (else `refusals.Refused`); its field terms are
    parsed with the search, which shows what is wrong with one beside the table."""
    try:
        _, words = field_terms.split_terms(q)
    except spi.FilterParseError:
        return q
    for word in words:
        refusals.check_filter("q", word)
    return q


def _search_of(q: str) -> tuple[list[spi.FieldMatch], str | None]:
    """The field terms of the search box and its id prefix: at most one other word."""
    matches, words = field_terms.split_terms(q)
    if len(words) > 1:
        raise spi.FilterParseError(
            "search for one id prefix and any field:<name>.<path>=<value> terms (got "
            + f"{len(words)} other words: {', '.join(repr(w) for w in words)}); quote a value holding "
            + 'spaces: field:order.customer="Ada Lovelace"'
        )
    return matches, words[0] if words else None


async def status_choices(store: spi.FlowStore) -> list[str]:
    """Every filter word: the base words, `failed:<kind>` for the kinds in the data, `waiting:<name>` for
    the inputs the served flows declare."""
    words = list(_BASE_WORDS)
    words += [f"failed:{kind}" for kind in await store.failure_kinds()]
    names = sorted({name for flow in registered_flows().values() for name in declared_inputs(flow)})
    words += [f"waiting:{name}" for name in names]
    return words


async def _table(query: Query) -> dict[str, object]:
    engine = await runtime.engine()
    error = ""
    try:
        matches, prefix = _search_of(query.q)
        result = await engine.executions.search(
            query.workflow or None,
            query.status or None,
            PAGE_SIZE,
            (query.page - 1) * PAGE_SIZE,
            prefix,
            matches,
        )
        rows, total = [common.row_of(s) for s in result.items], result.total
    except spi.FilterParseError as problem:
        rows, total, error = [], 0, str(problem)
    pages = max(1, -(-total // PAGE_SIZE))
    return {
        "rows": rows,
        "total": total,
        "query": query,
        "pages": pages,
        "error": error,
        "first": (query.page - 1) * PAGE_SIZE + 1 if rows else 0,
        "last": (query.page - 1) * PAGE_SIZE + len(rows),
        "previous_url": query.url(page=query.page - 1) if query.page > 1 else "",
        "next_url": query.url(page=query.page + 1) if query.page < pages else "",
    }


@login_required
@require_GET
async def executions(request: HttpRequest) -> HttpResponse:
    query = Query.of(request)
    table = await _table(query)
    if request.GET.get("partial") == "rows" or request.headers.get("HX-Request"):
        return await common.fragment(request, "console/partials/executions_table.html", table)
    engine = await runtime.engine()
    context = {
        **table,
        "nav": "executions",
        "status_choices": await status_choices(engine.store),
        "workflows": sorted(info.id for info in await engine.workflows.list()),
        "can_operate": await common.can_operate(request),
    }
    return await common.page(request, "console/executions.html", context)


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
                request, "console/partials/message.html", {"level": "error", "text": act.message}, status=400
            )
        outcomes, words = [], {}
        for eid in ids:
            outcome = await engine.executions.cancel(eid, reason, actor=actor)
            outcomes.append((eid, _outcome_words(outcome)))
            words[eid] = act.cancel_outcome(outcome)
        act.bulk(words)
    return await common.fragment(request, "console/partials/cancel_outcomes.html", {"outcomes": outcomes})


def _outcome_words(outcome: spi.CancelOutcome) -> str:
    match outcome:
        case spi.Accepted():
            return "cancel requested"
        case spi.AlreadyRequested():
            return "already requested"
        case spi.AlreadyTerminal(status):
            return f"already ended ({status.show()})"
    return "?"
