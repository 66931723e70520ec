"""The console's home: per workflow its executions by status, started/completed/failed per minute over the
last hour and per hour over the last day, failures by kind, stops by code, the executions retrying now and
the longest waiting, and the worker processes heard from.

Every count links to the executions list filtered to exactly that population (its `?workflow=&status=`
words); a chart's bar, and the sums above a chart, to the executions created in that span (started) or
whose last change, their ending, fell in it (completed, failed: `updated_after`/`updated_before`, what
the chart counts). The numbers part refreshes itself every few seconds (an htmx poll of
`overview/numbers/`): a poll, not the event feed, because the charts move with the clock (a minute passes
with no event) and a busy engine's feed would repaint the page on every event.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flowdeck.console import heartbeat, overview_chart, runtime, states
from flowdeck.console.views import common, list_query
from flowdeck.console.views.signin import login_required
from flowdeck.store import counts, spi

__all__ = ["overview", "overview_numbers"]

# The state words of `states.count_by_state` (parked apart from running: nothing runs it), in the order
# the table shows them (a word the store adds later still shows, after these).
STATUS_ORDER = ("running", "parked", "compensating", "stopped", "failed", "completed", "cancelled")
REFRESH_SECONDS = 5
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
SHOWN = 8  # executions listed as retrying now, and as waiting the longest


def list_url(workflow: str = "", status: str = "") -> str:
    """The executions list filtered to `workflow` and `status` (its filter words), as the list's URL."""
    kept = {k: v for k, v in (("status", status), ("workflow", workflow)) if v}
    base = reverse("flowdeck:console-executions")
    return f"{base}?{urlencode(kept, safe=':')}" if kept else base


def span_url(start: datetime, end: datetime, series: str) -> str:
    """The list of what an activity chart counts of `series` from `start` to `end`: the executions created
    then (started), or those completed or failed whose ending (last change) fell then, latest first."""
    if series == "started":
        query = list_query.Query("", "", "", 1, created_after=start, created_before=end)
    else:
        query = list_query.Query(series, "", "", 1, "updated", updated_after=start, updated_before=end)
    return reverse("flowdeck:console-executions") + query.url()


@dataclass(frozen=True)
class Cell:
    count: int
    url: str


@dataclass(frozen=True)
class WorkflowRow:
    workflow_id: str
    total: Cell
    cells: list[Cell | None]  # one per status column; None where there is none


def _status_rows(found: list[counts.StatusCount], registered: list[str]) -> dict[str, Any]:
    by: dict[str, dict[str, int]] = defaultdict(dict)
    for c in found:
        by[c.workflow_id][c.status] = c.executions
    extra = sorted({c.status for c in found} - set(STATUS_ORDER))
    columns = [*STATUS_ORDER, *extra]

    def row(workflow: str, tally: dict[str, int]) -> WorkflowRow:
        cells = [Cell(tally[s], list_url(workflow, s)) if tally.get(s) else None for s in columns]
        return WorkflowRow(workflow, Cell(sum(tally.values()), list_url(workflow)), cells)

    rows = [row(w, by.get(w, {})) for w in sorted({*by, *registered})]
    every: dict[str, int] = defaultdict(int)
    for c in found:
        every[c.status] += c.executions
    return {"columns": columns, "status_rows": rows, "status_total": row("", every)}


def _codes(found: list[counts.CodeCount]) -> dict[str, Any]:
    def shown(c: counts.CodeCount) -> dict[str, Any]:
        # a failure with no kind has no filter word of its own: it links to the workflow's failures
        word = f"{c.status}:{c.code}" if c.code is not None else c.status
        cell = Cell(c.executions, list_url(c.workflow_id, word))
        return {"workflow": c.workflow_id, "code": c.code, "cell": cell}

    return {
        "failures": [shown(c) for c in found if c.status == "failed"],
        "stops": [shown(c) for c in found if c.status == "stopped"],
    }


def _day_of_minutes(store: spi.FlowStore) -> Awaitable[Sequence[counts.ActivityBucket]]:
    """Per minute from the top of the hour 23 hours ago: one read that both charts are cut from."""
    now = store.now().replace(microsecond=0)
    return store.activity(now.replace(minute=0, second=0) - timedelta(hours=23), MINUTE)


def _cut(minutes: Sequence[counts.ActivityBucket]) -> tuple[list[counts.ActivityBucket], ...]:
    """The last hour's 60 minutes, and the day's hours (each the sum of its minutes)."""
    hours = [minutes[i : i + 60] for i in range(0, len(minutes), 60)]
    day = [
        counts.ActivityBucket(
            group[0].start,
            sum(b.started for b in group),
            sum(b.completed for b in group),
            sum(b.failed for b in group),
        )
        for group in hours
    ]
    return list(minutes[-60:]), day


def _drawn(
    last_hour: Sequence[counts.ActivityBucket], last_day: Sequence[counts.ActivityBucket]
) -> dict[str, Any]:
    zone = timezone.get_current_timezone()

    def linked(width: timedelta) -> overview_chart.Link:
        return lambda start, series: span_url(start, start + width, series)

    hour_title, day_title = "Per minute, the last hour", "Per hour, the last day"
    return {
        "hour_chart": overview_chart.bar_chart(
            last_hour, 600, "%H:%M", zone, hour_title, linked(MINUTE), "minute"
        ),
        "day_chart": overview_chart.bar_chart(
            last_day, 3 * 3600, "%H:00", zone, day_title, linked(HOUR), "hour"
        ),
        "hour_sums": _sums(last_hour, MINUTE),
        "day_sums": _sums(last_day, HOUR),
    }


def _sums(buckets: Sequence[counts.ActivityBucket], width: timedelta) -> dict[str, Cell]:
    """Each series' sum over the chart, linked to the list of what it counts over the chart's span."""
    if not buckets:
        return {series: Cell(0, "") for series in overview_chart.SERIES}
    start, end = buckets[0].start, buckets[-1].start + width
    return {
        series: Cell(sum(getattr(b, series) for b in buckets), span_url(start, end, series))
        for series in overview_chart.SERIES
    }


def _waits(page: counts.WaitingPage, now: datetime) -> dict[str, Any]:
    return {
        "total": page.total,
        "items": [
            {"w": w, "open": _age(now - w.created), "moved": _age(now - w.updated)} for w in page.items
        ],
    }


def _age(span: timedelta) -> str:
    seconds = max(0, int(span.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {seconds}s" if minutes else f"{seconds}s"


async def _total(store: spi.FlowStore, filt: spi.ExecutionFilter.Any, word: str) -> Cell:
    return Cell((await store.list_executions(None, filt, limit=0)).total, list_url(status=word))


async def numbers(
    store: spi.FlowStore, registered: list[str], served: frozenset[str] | None = None
) -> dict[str, Any]:
    """Everything the numbers part shows, read from the store: its reads are independent, so they run
    at once (on PostgreSQL the store serves them on as many connections; SQLite runs them in turn)."""
    now = store.now()
    (
        by_status,
        by_code,
        minutes,
        retrying,
        waiting,
        on_input,
        sleeping,
        workers,
    ) = await asyncio.gather(
        states.count_by_state(store, served) if served is not None else store.count_by_status(),
        store.count_by_code(),
        _day_of_minutes(store),
        store.waiting_longest(SHOWN, retrying=True),
        store.waiting_longest(SHOWN),
        _total(store, spi.ExecutionFilter.WaitingForInput(), "waiting"),
        _total(store, spi.ExecutionFilter.Sleeping(), "sleeping"),
        heartbeat.executors(store),
    )
    return {
        **_status_rows(list(by_status), registered),
        **_codes(list(by_code)),
        **_drawn(*_cut(minutes)),
        "retrying": {**_waits(retrying, now), "url": list_url(status="retrying")},
        "waiting": _waits(waiting, now),
        "on_input": on_input,
        "sleeping": sleeping,
        "workers": workers,
        "heard_within_seconds": int(heartbeat.HEARD_WITHIN.total_seconds()),
        "refresh_seconds": REFRESH_SECONDS,
        "now": now,
    }


async def _context() -> dict[str, Any]:
    engine = await runtime.reader()
    workflows = await engine.workflows.list()
    registered = sorted(info.id for info in workflows)
    return await numbers(engine.store, registered, states.served_hashes(workflows))


@login_required
@require_GET
async def overview(request: HttpRequest) -> HttpResponse:
    return await common.page(
        request,
        "flowdeck/console/overview.html",
        {**(await _context()), "nav": "overview", **(await common.replica_context())},
    )


@login_required
@require_GET
async def overview_numbers(request: HttpRequest) -> HttpResponse:
    """The numbers part alone (the page polls it every `REFRESH_SECONDS`)."""
    context = {**(await _context()), **(await common.replica_context())}
    return await common.fragment(request, "flowdeck/console/partials/overview_numbers.html", context)
