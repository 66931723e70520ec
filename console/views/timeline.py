"""The execution's history as a timeline (the waterfall fragment) and as a JSON document to download.

The bars are computed by `console.timeline` from the whole history and laid out here, on a scale of
0..1000 across the execution's span, as server-made SVG (no inline style: the CSP forbids it). A page
shows `LANES_PAGE` lanes, so a history of thousands of nodes stays light in the browser; the filters (an
event kind, a node) and the page travel as query parameters, which the page's script keeps while the
websocket asks it to fetch the fragment again.

The download is the REST history route's document for the whole history
(`GET /api/v1/executions/{id}/history?limit=-1`), rendered by the API's own renderer: the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from console import refusals, runtime, schemas, timeline
from console.views import common

__all__ = ["LANES_PAGE", "history_json", "timeline_fragment"]

LANES_PAGE = 40
SCALE = 1000  # the track's viewBox width
_MIN_WIDTH = 3.0  # a bar of a few microseconds still shows as a sliver
_TICKS = 5
_SUGGESTED = (
    500  # node names offered as you type; past that, type the name (a foreach's items run to thousands)
)


def absolute(at: datetime) -> str:
    """The instant an operator reads on hover: date, time to the millisecond, and the zone."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _moment(at: datetime, origin: datetime) -> dict[str, str]:
    return {"iso": at.isoformat(), "title": absolute(at), "text": timeline.offset_text(at, origin)}


class _Scale:
    """The axis over the shown lanes' extent: a page of a long history, or a filter, is drawn across the
    whole width instead of as slivers of the execution's span (the labels stay relative to its start)."""

    def __init__(self, lanes: Sequence[timeline.Lane], tl: timeline.Timeline, now: datetime) -> None:
        starts = [lane.start for lane in lanes]
        ends = [lane.start + lane.busy(now) for lane in lanes]
        self.start = min(starts, default=tl.start)
        self.end = max(ends, default=tl.end)
        if lanes and lanes[0].name == timeline.EXECUTION_LANE:
            self.end = max(self.end, tl.end)
        self.seconds = max((self.end - self.start).total_seconds(), 1e-6)
        self.whole = (self.start, self.end) == (tl.start, tl.end)

    def x(self, at: datetime) -> float:
        return round(min(max((at - self.start).total_seconds() / self.seconds, 0.0), 1.0) * SCALE, 2)

    def box(self, start: datetime, end: datetime) -> tuple[float, float]:
        x = self.x(start)
        width = max(self.x(end) - x, _MIN_WIDTH)
        return min(x, SCALE - width), width


def _bar_title(bar: timeline.Bar, now: datetime) -> str:
    what = f"attempt {bar.attempt}" if bar.kind == "attempt" else bar.kind
    end = "now" if bar.end is None else absolute(bar.end)
    words = [what, bar.outcome, timeline.duration_text(bar.duration(now)), f"{absolute(bar.start)} → {end}"]
    if bar.due is not None:
        words.append(f"due {absolute(bar.due)}")
    if bar.detail:
        words.append(bar.detail)
    return " · ".join(words)


def _lane_view(lane: timeline.Lane, tl: timeline.Timeline, scale: _Scale, now: datetime) -> dict[str, Any]:
    bars = []
    for bar in lane.bars:
        x, width = scale.box(bar.start, bar.until(now))
        bars.append(
            {
                "x": x,
                "w": width,
                "cls": f"tl-{bar.kind} tl-{bar.outcome}" + (" tl-open" if bar.open else ""),
                "title": _bar_title(bar, now),
            }
        )
    marks = [
        {"x": min(scale.x(m.at), SCALE - 2), "cls": f"tl-mark tl-mark-{m.kind}", "title": _mark_title(m)}
        for m in lane.markers
    ]
    failures = [
        b.detail if b.outcome == "failed" else f"attempt {b.attempt} {b.outcome}: {b.detail}"
        for b in lane.bars
        if b.outcome in ("failed", "retried", "timed-out", "compensation-failed") and b.detail
    ]
    return {
        "name": lane.name,
        "outcome": lane.outcome(),
        "attempts": lane.attempts(),
        "busy": timeline.duration_text(lane.busy(now)),
        "started": _moment(lane.start, tl.start),
        "bars": bars,
        "marks": marks,
        "error": failures[-1] if failures else "",
    }


def _mark_title(mark: timeline.Marker) -> str:
    said = f" · {mark.detail}" if mark.detail else ""
    return f"{mark.kind} · #{mark.seq} · {absolute(mark.at)}{said}"


def layout(
    tl: timeline.Timeline, now: datetime, *, kind: str = "", node: str = "", page: int = 0
) -> dict[str, Any]:
    """The fragment's context: the filtered lanes of one page laid out on the execution's span."""
    shown = tl.filtered(kind=kind, node=node)
    lanes, pages = timeline.lanes_page(shown.lanes, page, LANES_PAGE)
    page = min(max(page, 0), pages - 1)
    scale = _Scale(lanes, tl, now)
    window = scale.end - scale.start
    ticks = [scale.start + window * (i / (_TICKS - 1)) for i in range(_TICKS)]
    return {
        "tl": tl,
        "lanes": [_lane_view(lane, tl, scale, now) for lane in lanes],
        "unwinds": [(*scale.box(u.start, u.end or now), u.cause) for u in tl.unwinds],
        "ticks": [_moment(t, tl.start) for t in ticks],
        "span": timeline.duration_text(tl.span),
        "window": None if scale.whole else (_moment(scale.start, tl.start), _moment(scale.end, tl.start)),
        "origin": _moment(tl.start, tl.start),
        "kinds": tl.event_kinds(),
        "nodes": tl.node_names()[:_SUGGESTED],
        "kind": kind,
        "node": node,
        "page": page,
        "pages": pages,
        "first": page * LANES_PAGE + 1 if lanes else 0,
        "last": page * LANES_PAGE + len(lanes),
        "total_lanes": len(shown.lanes),
        "scale": SCALE,
    }


async def timeline_of(execution_id: str) -> tuple[timeline.Timeline, datetime]:
    engine = await runtime.engine()
    detail = await common.described(engine, execution_id)
    page = await engine.executions.history(execution_id, None, 0)
    now = engine.store.now()
    return timeline.build(page.events, now, set(detail.state.waits)), now


async def timeline_context(request: HttpRequest, execution_id: str) -> dict[str, Any]:
    tl, now = await timeline_of(execution_id)
    kind = request.GET.get("kind", "").strip()
    node = request.GET.get("node", "").strip()
    page = refusals.whole_number(request.GET, "page", 0)
    return {"execution_id": execution_id, **layout(tl, now, kind=kind, node=node, page=page)}


@login_required
@require_GET
async def timeline_fragment(request: HttpRequest, execution_id: str) -> HttpResponse:
    """The waterfall, filtered by `kind` (an event kind) and `node` (a lane), page `page` (0-based)."""
    context = await timeline_context(request, execution_id)
    return await common.fragment(request, "console/partials/timeline.html", context)


@login_required
@require_GET
async def history_json(request: HttpRequest, execution_id: str) -> HttpResponse:
    """The whole history as the REST route's document, as a file to save."""
    from console.api import api  # the API's renderer writes the bytes the route would

    engine = await runtime.engine()
    await common.described(engine, execution_id)
    page = await engine.executions.history(execution_id, None, 0)
    document = schemas.history_of(page).model_dump(by_alias=True)
    response = api.create_response(request, document, status=200)
    response["Content-Disposition"] = f'attachment; filename="{_file_name(execution_id)}-history.json"'
    return response


def _file_name(execution_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in execution_id)[:100] or "execution"
