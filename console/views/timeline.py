"""The execution's history as a timeline (the waterfall fragment) and as a JSON document to download.

The bars are computed by `console.timeline` and laid out here as server-made SVG (no inline style: the
CSP forbids it). A bar's x is its start in milliseconds from the execution's first event, and each track's
viewBox is the window shown: when a live execution's window grows, the page moves the viewBoxes and the
bars already drawn stay as they are. A page shows `LANES_PAGE` lanes, so a history of thousands of nodes
stays light in the browser; the filters (an event kind, a node) and the page travel as query parameters.

Live: the page asks again with `after=SEQ`, the last event it has. The answer is a delta: the rows of the
lanes on the page that changed after SEQ (or are still open, and so grow with the clock), the page's lane
order, the summary and the axis. The history is folded once per execution and process (`_folds`), and
extended by the events after the fold's last seq, so a live event does not read the whole history again.

The download is the REST history route's document for the whole history
(`GET /api/v1/executions/{id}/history?limit=-1`), rendered by the API's own renderer: the same bytes.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import badges, drawn, durations, refusals, runtime, schemas, states, timeline
from flowdeck.console.timeline_races import settle_races
from flowdeck.console.timeline_states import LaneState, lane_states
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required
from flowdeck.engine import places
from flowdeck.store.events import EventKind

__all__ = ["LANES_PAGE", "history_json", "lanes_page", "layout", "timeline_fragment"]

LANES_PAGE = 40
SCALE = 1000  # a bar is at least _MIN_WIDTH / SCALE of the window wide
_MIN_WIDTH = 3.0  # a bar of a few microseconds still shows as a sliver
_TICKS = 5
_SUGGESTED = (
    500  # node names offered as you type; past that, type the name (a foreach's items run to thousands)
)
_FOLDS_KEPT = 64  # executions whose folded history a process keeps (the ones being watched)
_folds: OrderedDict[tuple[int, str], tuple[tuple[str, datetime], timeline.Fold]] = OrderedDict()


def lanes_page(lanes: Sequence[timeline.Lane], page: int, size: int) -> tuple[Sequence[timeline.Lane], int]:
    """Page `page` (0-based, clamped) of `lanes` and the number of pages."""
    pages = max(1, -(-len(lanes) // size))
    page = min(max(page, 0), pages - 1)
    return lanes[page * size : (page + 1) * size], pages


def absolute(at: datetime) -> str:
    """The instant an operator reads on hover: date, time to the millisecond, and the zone."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _moment(at: datetime, origin: datetime) -> dict[str, str]:
    return {"iso": at.isoformat(), "title": absolute(at), "text": durations.offset_text(at, origin)}


class _Scale:
    """The axis over the shown lanes' extent: a page of a long history, or a filter, is drawn across the
    whole width instead of as slivers of the execution's span (the labels stay relative to its start).
    Coordinates are milliseconds from the execution's start; the window is the tracks' viewBox."""

    def __init__(self, lanes: Sequence[timeline.Lane], tl: timeline.Timeline, now: datetime) -> None:
        starts = [lane.start for lane in lanes]
        ends = [lane.start + lane.busy(now) for lane in lanes]
        self.origin = tl.start
        self.start = min(starts, default=tl.start)
        self.end = max(ends, default=tl.end)
        if lanes and lanes[0].name == timeline.EXECUTION_LANE:
            self.end = max(self.end, tl.end)
        self.whole = (self.start, self.end) == (tl.start, tl.end)
        self.left = self.ms(self.start)
        self.width = max(self.ms(self.end) - self.left, 1e-3)
        self.least = self.width * _MIN_WIDTH / SCALE

    def ms(self, at: datetime) -> float:
        return round((at - self.origin).total_seconds() * 1000, 3)

    def x(self, at: datetime) -> float:
        return min(max(self.ms(at), self.left), self.left + self.width)

    def box(self, start: datetime, end: datetime) -> tuple[float, float]:
        x = self.x(start)
        width = round(max(self.x(end) - x, self.least), 3)
        return round(min(x, self.left + self.width - width), 3), width

    @property
    def viewbox(self) -> str:
        return f"{self.left:g} 0 {round(self.width, 3):g} 20"


def _bar_title(bar: timeline.Bar, now: datetime) -> str:
    what = f"attempt {bar.attempt}" if bar.kind == "attempt" else bar.kind
    end = "now" if bar.end is None else absolute(bar.end)
    words = [what, bar.outcome, durations.duration_text(bar.duration(now)), f"{absolute(bar.start)} → {end}"]
    if bar.due is not None:
        words.append(f"due {absolute(bar.due)}")
    if bar.detail:
        words.append(bar.detail)
    return " · ".join(words)


def _lane_view(
    lane: timeline.Lane, tl: timeline.Timeline, scale: _Scale, now: datetime, state: LaneState | None
) -> dict[str, Any]:
    bars = []
    for bar in lane.bars:
        x, width = scale.box(bar.start, bar.until(now))
        cls = f"tl-{bar.kind} tl-{bar.outcome}" + (" tl-open" if bar.open else "")
        bars.append({"x": x, "w": width, "cls": cls, "title": _bar_title(bar, now)})
    marks = [
        {"x": scale.box(m.at, m.at)[0], "cls": f"tl-mark tl-mark-{m.kind}", "title": _mark_title(m)}
        for m in lane.markers
    ]
    failures = [
        b.detail if b.outcome == "failed" else f"attempt {b.attempt} {b.outcome}: {b.detail}"
        for b in lane.bars
        if b.outcome in ("failed", "retried", "timed-out", "compensation-failed") and b.detail
    ]
    lost = [b.detail for b in lane.bars if b.outcome == "lost" and b.detail]
    return {
        "name": lane.name,
        "state": state,
        "attempts": lane.attempts(),
        "busy": durations.duration_text(lane.busy(now)),
        "started": _moment(lane.start, tl.start),
        "bars": bars,
        "marks": marks,
        "mark_width": round(scale.width * 2 / SCALE, 3),
        "error": failures[-1] if failures else "",
        "lost": lost[-1] if lost else "",
    }


def _mark_title(mark: timeline.Marker) -> str:
    said = f" · {mark.detail}" if mark.detail else ""
    return f"{mark.kind} · #{mark.seq} · {absolute(mark.at)}{said}"


_DECIDED_LATE = frozenset({"abandoned", "interrupted", "lost", "won"})


def _changed(lane: timeline.Lane, after: int) -> bool:
    """Whether the lane's row may differ from the one drawn when the page had the events up to `after`:
    a bar with a newer event, one still open (it grows with the clock), or one whose end or outcome is
    not an event of its own (closed by the ending, lost or won when the race was decided elsewhere)."""
    return any(m.seq > after for m in lane.markers) or any(
        b.open
        or max(b.seqs, default=0) > after
        or b.outcome in _DECIDED_LATE
        or (b.kind == "claim" and EventKind.EXECUTION_RELEASED.value not in b.kinds)
        for b in lane.bars
    )


def layout(
    tl: timeline.Timeline,
    now: datetime,
    *,
    kind: str = "",
    node: str = "",
    page: int = 0,
    after: int | None = None,
    said: Mapping[str, LaneState] | None = None,
) -> dict[str, Any]:
    """The fragment's context: the filtered lanes of one page laid out on the shown lanes' window, each
    with its state from `said` (lane name → state; none without). With `after` (the last seq the page
    has), only the lanes changed since then are laid out (`delta`), and the states of every lane of the
    page ride along: a node's state may change with no event on its own lane (a foreach compensated by
    its items' handlers, an arm that lost when another won)."""
    said = said or {}
    shown = tl.filtered(kind=kind, node=node)
    lanes, pages = lanes_page(shown.lanes, page, LANES_PAGE)
    page = min(max(page, 0), pages - 1)
    scale = _Scale(lanes, tl, now)
    window = scale.end - scale.start
    ticks = [scale.start + window * (i / (_TICKS - 1)) for i in range(_TICKS)]
    # an unwind shades every track: while there is one, the page takes the whole fragment
    delta = after is not None and not tl.unwinds and after <= tl.seq
    changed = [lane for lane in lanes if not delta or _changed(lane, after or 0)]
    return {
        "tl": tl,
        "lanes": [_lane_view(lane, tl, scale, now, said.get(lane.name)) for lane in changed],
        "said": [{"name": lane.name, "state": said.get(lane.name)} for lane in lanes] if delta else [],
        "delta": delta,
        "order": json.dumps([lane.name for lane in lanes]),
        "unwinds": [(*scale.box(u.start, u.end or now), u.cause) for u in tl.unwinds],
        "ticks": [_moment(t, tl.start) for t in ticks],
        "span": durations.duration_text(tl.span),
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
        "viewbox": scale.viewbox,
    }


async def _folded(engine: Any, execution_id: str) -> timeline.Fold:
    """The execution's history folded, extended by the events after the fold kept from the last ask. A
    fold is kept only while its first event is the store's (an id used again, a store replaced: afresh)."""
    store = engine.store
    first = (await engine.executions.history(execution_id, 1, 0)).events
    mark = (first[0].kind.value, first[0].timestamp) if first else ("", datetime.min)
    key = (id(store), execution_id)
    kept = _folds.get(key)
    fold = kept[1] if kept is not None and kept[0] == mark else timeline.Fold()
    page = await engine.executions.history(execution_id, None, fold.seq)
    fold.extend(page.events)
    _folds[key] = (mark, fold)
    _folds.move_to_end(key)
    while len(_folds) > _FOLDS_KEPT:
        _folds.popitem(last=False)
    return fold


async def timeline_of(execution_id: str) -> tuple[timeline.Timeline, datetime, dict[str, LaneState]]:
    """The execution's waterfall as of the store's now, and each lane's state (`timeline_states`); read
    from the read replica when there is one (`runtime.reader`)."""
    engine = await runtime.reader()
    detail = await common.described(engine, execution_id)
    fold = await _folded(engine, execution_id)
    now = engine.store.now()
    tl = fold.timeline(now, set(detail.state.waits))
    served = await states.served_by(engine)
    # the progress the diagram and the node panel paint: a parked execution's from its stored version
    found = await drawn.drawable(engine, detail)
    progress = found.detail.progress
    if progress is not None:
        statuses: dict[str, set[str]] = {}
        for node in progress.nodes:
            statuses.setdefault(node.name, set()).add(str(node.status))
        tl = settle_races(tl, statuses)
    words = places.branch_words(found.flow) if found.flow is not None else {}
    badge = badges.badge_of(detail.state, served)
    said = lane_states(tl, progress, words, badge, runs=detail.state.hash in served)
    return tl, now, said


async def timeline_context(request: HttpRequest, execution_id: str) -> dict[str, Any]:
    tl, now, said = await timeline_of(execution_id)
    kind = request.GET.get("kind", "").strip()
    node = request.GET.get("node", "").strip()
    page = refusals.whole_number(request.GET, "page", 0)
    after = refusals.whole_number(request.GET, "after", -1)
    since = None if after < 0 else after
    context = layout(tl, now, kind=kind, node=node, page=page, after=since, said=said)
    return {"execution_id": execution_id, **context}


@login_required
@require_GET
async def timeline_fragment(request: HttpRequest, execution_id: str) -> HttpResponse:
    """The waterfall, filtered by `kind` (an event kind) and `node` (a lane), page `page` (0-based); with
    `after` (a seq), the delta since the page had the events up to it."""
    context = await timeline_context(request, execution_id)
    template = "timeline_delta" if context["delta"] else "timeline"
    return await common.fragment(request, f"flowdeck/console/partials/{template}.html", context)


@login_required
@require_GET
async def history_json(request: HttpRequest, execution_id: str) -> HttpResponse:
    """The whole history as the REST route's document, as a file to save; with `after=SEQ`, the events
    after that seq (the REST route's `after`)."""
    from flowdeck.console.api import api  # the API's renderer writes the bytes the route would

    after = refusals.whole_number(request.GET, "after", 0)
    engine = await runtime.reader()
    await common.described(engine, execution_id)
    page = await engine.executions.history(execution_id, None, after)
    document = schemas.history_of(page).model_dump(by_alias=True)
    response = api.create_response(request, document, status=200)
    response["Content-Disposition"] = f'attachment; filename="{_file_name(execution_id)}-history.json"'
    return response


def _file_name(execution_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in execution_id)[:100] or "execution"
