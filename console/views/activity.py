"""The activity page: every operator action (console, API, CLI), newest first, filtered by user, action,
source, execution and time, in keyset pages (`?before=<id of the last row shown>`).

Every logged-in user reads it, as every logged-in user reads the executions it names (the console's
permissions govern changing things, not seeing them). The filters live in the URL, so a page is shareable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flowdeck.console import activity, bulk, refusals
from flowdeck.console.models import Activity
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required

__all__ = ["activity_page", "summary"]

_MAX_ID = 2**63 - 1


@dataclass(frozen=True)
class Filters:
    """The page's query as typed (the form shows it back) and as `activity.Query` reads it."""

    user: str = ""
    action: str = ""
    source: str = ""
    execution: str = ""
    since: str = ""  # `from` in the URL (a keyword here)
    until: str = ""  # `to`

    @classmethod
    def of(cls, request: HttpRequest) -> Filters:
        params = request.GET
        found = {
            name: params.get(key, "").strip()
            for name, key in (
                ("user", "user"),
                ("action", "action"),
                ("source", "source"),
                ("execution", "execution"),
                ("since", "from"),
                ("until", "to"),
            )
        }
        return cls(**found)

    def query(self) -> activity.Query:
        """The store query; `refusals.Refused` for a source or a time it cannot be."""
        if self.source and self.source not in activity.SOURCES:
            raise refusals.Refused("source", f"must be one of {', '.join(activity.SOURCES)}")
        return activity.Query(
            self.user,
            self.action,
            self.source,
            self.execution,
            _time("from", self.since),
            _time("to", self.until),
        )

    def url(self, **change: Any) -> str:
        values = asdict(self) | change
        renamed = {{"since": "from", "until": "to"}.get(k, k): v for k, v in values.items()}
        kept = {k: v for k, v in renamed.items() if v not in ("", None)}
        return "?" + urlencode(kept) if kept else "?"


def _time(what: str, text: str) -> datetime | None:
    if not text:
        return None
    try:
        return activity.parse_time(text)
    except ValueError as error:
        raise refusals.Refused(what, str(error)) from None


def summary(row: Activity) -> str:
    """The request's detail in a line: the input or node (and the value's size, never the value), the
    reason, what a resume report said, what a bulk action did to its executions."""
    detail = row.detail or {}
    parts = []
    if "input" in detail:
        parts.append(f"input {detail['input']}" + _size(detail))
    if "node" in detail:
        parts.append(f"node {detail['node']}" + _size(detail))
    if detail.get("inputs"):
        parts.append("inputs " + ", ".join(map(str, detail["inputs"])))
    if "conflicts" in detail:
        conflicts = detail["conflicts"]
        parts.append(
            f"kept {detail.get('kept', 0)}, next {detail.get('next_node') or '(end)'}"
            + (f", conflicts: {', '.join(map(str, conflicts))}" if conflicts else "")
        )
    if "requested" in detail:
        parts.append(f"{detail['requested']} asked to cancel")
    if isinstance(detail.get("outcomes"), dict):
        counts: dict[str, int] = {}
        for word in detail["outcomes"].values():
            counts[str(word)] = counts.get(str(word), 0) + 1
        parts.append(", ".join(f"{n} {word}" for word, n in sorted(counts.items())))
    if detail.get("reason"):
        parts.append(f"reason: {detail['reason']}")
    if detail.get("status"):
        parts.append(f"was {detail['status']}")
    return " · ".join(parts)


def _workflow_url(workflow_id: str) -> str:
    """The workflow's page; none for an id no page can have (a refused start may name anything)."""
    if not workflow_id:
        return ""
    try:
        return reverse("flowdeck:console-workflow", args=[workflow_id])
    except NoReverseMatch:
        return ""


def _size(detail: dict[str, Any]) -> str:
    size = detail.get("size")
    return f" ({size} bytes)" if isinstance(size, int) and size else ""


def _rows(filters: Filters, before: int | None) -> dict[str, Any]:
    rows, after = activity.read_page(filters.query(), activity.PAGE_SIZE, before)
    shown = [
        {
            "row": r,
            "ids": activity.execution_ids(r),
            "summary": summary(r),
            "user_url": filters.url(user=r.actor),
            "workflow_url": _workflow_url(r.workflow_id),
            "operation_url": (
                reverse("flowdeck:console-bulk-operation", args=[r.pk])
                if bulk.is_operation(r.action, r.detail)
                else ""
            ),
        }
        for r in rows
    ]
    actors = sorted(set(Activity.objects.values_list("actor", flat=True).distinct()[:200]))
    return {"rows": shown, "after": after, "actors": actors}


@login_required
@require_GET
async def activity_page(request: HttpRequest) -> HttpResponse:
    filters = Filters.of(request)
    before = refusals.whole_number(request.GET, "before", 0, minimum=1, maximum=_MAX_ID) or None
    found = await sync_to_async(_rows)(filters, before)
    context = {
        **found,
        "nav": "activity",
        "filters": filters,
        "actions": activity.ACTIONS,
        "sources": activity.SOURCES,
        "older_url": filters.url(before=found["after"]) if found["after"] else "",
        "newest_url": filters.url() if before else "",
        "zone": timezone.get_current_timezone_name(),
    }
    return await common.page(request, "flowdeck/console/activity.html", context)
