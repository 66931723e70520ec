"""An execution's history as a waterfall: one lane per node, one bar per attempt, wait, sleep, back-off and
compensation, the unwind as a span of its own.

Pure: `build` reads events (in seq order) and the current time from the caller (the store's clock), and
answers values; nothing here reads a store or renders HTML. The history is the only source, so the bars
say what the record says and no more:

- an attempt runs from its StepStarted (or, for a retry run in-process, from the end of its back-off) to
  the StepCompleted, StepFailed, StepRetried or StepTimedOut that ends it; each retry is a bar of its own;
- a back-off runs from the StepRetried to its due time, or to the StepStarted that began the next attempt
  when the retry parked in a durable row;
- a sleep runs from SleepStarted to SleepCompleted, a wait from InputWaiting to InputReceived (or the
  InputDischarged that consumed it);
- a compensation handler runs from the previous mark of the unwind to its NodeCompensated (or
  CompensationFailed); the unwind from CompensationStarted to CompensationCompleted (or the stop or end);
- a claim (the lane `execution`) from ExecutionClaimed (and the ExecutionResumed beside it) to
  ExecutionReleased; the unwind's start and end are marks on that lane too, so every kind in the history
  selects something;
- a composite (a foreach, a subflow) whose StepCompleted has no start of its own spans its children
  (`name~…`).

A bar left open is still going while the execution is live and the store still holds its wait; a wait or
sleep that lost its race (its row retired) ends with the claim that ran the race, and anything open when
the history ends (completed, failed, cancelled, ended, stopped) ends there, as abandoned.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from flowdeck.console.durations import duration_text
from flowdeck.store.events import Event, EventKind

__all__ = [
    "EXECUTION_LANE",
    "Bar",
    "Lane",
    "Marker",
    "Span",
    "Timeline",
    "Fold",
    "build",
    "lane_of",
    "matches",
]

EXECUTION_LANE = "execution"
"""The lane of the execution's own bars (claims) and marks (created, cancel asked, ended)."""

_FINISHING = frozenset(
    {EventKind.COMPLETED, EventKind.FAILED, EventKind.CANCELLED, EventKind.ENDED, EventKind.STOPPED}
)
_EXECUTION_MARKS = frozenset(
    {
        EventKind.CREATED,
        EventKind.CANCEL_REQUESTED,
        EventKind.RESUMED,
        EventKind.COMPLETED,
        EventKind.FAILED,
        EventKind.CANCELLED,
        EventKind.ENDED,
        EventKind.STOPPED,
    }
)
_NODE_KEYS = ("step_name", "input_name", "node_name", "node", "dispatch_name")


def _path(event: Event) -> str:
    d = event.data
    return next((str(d[key]) for key in _NODE_KEYS if d.get(key) is not None), "")


def lane_of(event: Event) -> str:
    """The lane the waterfall puts `event` on (bar or mark): what the node filter selects, so the event
    table beside the waterfall filters by the same rule."""
    path = _path(event)
    if event.kind is EventKind.INPUT_SUPPLIED:
        return path.rsplit("~", 1)[0]
    claims = (EventKind.EXECUTION_CLAIMED, EventKind.EXECUTION_RELEASED)
    return (
        EXECUTION_LANE if event.kind in _EXECUTION_MARKS or event.kind in claims else path or EXECUTION_LANE
    )


def matches(event: Event, *, kind: str = "", node: str = "") -> bool:
    """Whether the filters `kind` (an event kind) and `node` (a lane name) select `event`."""
    return (not kind or event.kind.value == kind) and (not node or lane_of(event) == node)


@dataclass(frozen=True)
class Bar:
    """One interval on a lane. `kind`: attempt, backoff, sleep, wait, compensation, group or claim.
    `outcome`: how it ended (completed, failed, retried, timed-out, received, discharged, compensated,
    compensation-failed, released, abandoned) or, while open (`end` None), what it is doing (running,
    sleeping, waiting, backing-off, compensating, claimed). `due`: a sleep's deadline or a back-off's due
    time. `kinds`: the event kinds behind the bar; `seqs` their positions in the history."""

    lane: str
    kind: str
    start: datetime
    end: datetime | None
    outcome: str
    attempt: int = 0
    detail: str = ""
    due: datetime | None = None
    kinds: frozenset[str] = frozenset()
    seqs: tuple[int, ...] = ()

    @property
    def open(self) -> bool:
        return self.end is None

    def until(self, now: datetime) -> datetime:
        return self.end if self.end is not None else max(now, self.start)

    def duration(self, now: datetime) -> timedelta:
        return self.until(now) - self.start

    def closed(self, end: datetime, outcome: str, event: Event | None = None, detail: str = "") -> Bar:
        kinds, seqs = self.kinds, self.seqs
        if event is not None:
            kinds = kinds | {event.kind.value}
            seqs = (*seqs, event.seq or 0)
        return replace(
            self,
            end=max(end, self.start),
            outcome=outcome,
            detail=detail or self.detail,
            kinds=kinds,
            seqs=seqs,
        )


@dataclass(frozen=True)
class Marker:
    """An instant on a lane: an event that is not the edge of a bar (created, cancel asked, branch chosen,
    input supplied, undo noted, answered, the ending)."""

    lane: str
    at: datetime
    kind: str
    detail: str
    seq: int


@dataclass(frozen=True)
class Span:
    """The unwind: from CompensationStarted to its completion (None while it runs)."""

    start: datetime
    end: datetime | None
    cause: str


@dataclass(frozen=True)
class Lane:
    name: str
    bars: tuple[Bar, ...]
    markers: tuple[Marker, ...]

    @property
    def start(self) -> datetime:
        return min([b.start for b in self.bars] + [m.at for m in self.markers])

    def attempts(self) -> int:
        return sum(1 for b in self.bars if b.kind == "attempt")

    def busy(self, now: datetime) -> timedelta:
        """From the lane's first start to its last end: how long the node took, waits included."""
        ends = [b.until(now) for b in self.bars] + [m.at for m in self.markers]
        return max(ends) - self.start

    def outcome(self) -> str:
        """The last bar's outcome (the lane's state as the history tells it), or the last mark's kind."""
        own = [b for b in self.bars if b.kind != "backoff"] or list(self.bars)
        if own:
            return max(own, key=lambda b: (b.start, b.seqs)).outcome
        return self.markers[-1].kind if self.markers else ""


@dataclass(frozen=True)
class Timeline:
    """The waterfall: lanes in the order the history first names them (the execution's lane first)."""

    start: datetime
    end: datetime
    lanes: tuple[Lane, ...]
    unwinds: tuple[Span, ...]
    live: bool
    events: int
    seq: int = 0  # the last event's seq: a page that has it asks for what came after
    kinds: frozenset[str] = frozenset()  # every event kind of the history folded, drawn or not

    @property
    def span(self) -> timedelta:
        return self.end - self.start

    def lane(self, name: str) -> Lane | None:
        return next((lane for lane in self.lanes if lane.name == name), None)

    def node_names(self) -> list[str]:
        return [lane.name for lane in self.lanes]

    def event_kinds(self) -> list[str]:
        """The kinds the history holds, in the enum's order: what the kind filter offers (read from the
        history, not from the bars, so a kind drawn nowhere is still offered to the event table)."""
        return [k.value for k in EventKind if k.value in self.kinds]

    def filtered(self, *, kind: str = "", node: str = "") -> Timeline:
        """The lanes (and within them the bars and marks) that `kind` (an event kind) and `node` (a lane
        name) select; an empty selector selects everything."""
        lanes = []
        for lane in self.lanes:
            if node and lane.name != node:
                continue
            bars = tuple(b for b in lane.bars if not kind or kind in b.kinds)
            markers = tuple(m for m in lane.markers if not kind or m.kind == kind)
            if bars or markers:
                lanes.append(Lane(lane.name, bars, markers))
        return replace(self, lanes=tuple(lanes))


# ------------------------------------------------------------------------------------------ building

_CONTAINERS = ("bars", "markers", "order", "retries", "unwinds", "released", "seen")


@dataclass
class _Builder:
    now: datetime
    waiting: Collection[str] | None
    bars: list[Bar] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    order: dict[str, None] = field(default_factory=dict)
    open: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (lane, kind) -> indexes
    retries: dict[str, int] = field(default_factory=dict)
    unwinds: list[Span] = field(default_factory=list)
    unwind_mark: datetime | None = None
    released: list[datetime] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # the event kinds folded
    finished: Event | None = None

    def copy(self, now: datetime, waiting: Collection[str] | None) -> _Builder:
        """A copy to settle as of `now`: the bars and marks are values, the containers are copied."""
        shallow = {name: copy.copy(getattr(self, name)) for name in _CONTAINERS}
        opened = {key: list(indexes) for key, indexes in self.open.items()}
        return replace(self, now=now, waiting=waiting, open=opened, **shallow)

    # ---------------------------------------------------------------------------------- bookkeeping

    def name(self, lane: str) -> str:
        self.order.setdefault(lane, None)
        return lane

    def begin(self, bar: Bar) -> None:
        self.name(bar.lane)
        self.open.setdefault((bar.lane, bar.kind), []).append(len(self.bars))
        self.bars.append(bar)

    def end(self, lane: str, kind: str) -> int | None:
        """The index of the oldest open bar of `kind` on `lane`, taken off the open list (race arms that
        share a name close first-come, first-served)."""
        waiting = self.open.get((lane, kind))
        return waiting.pop(0) if waiting else None

    def close(self, lane: str, kind: str, event: Event, outcome: str, detail: str = "") -> bool:
        index = self.end(lane, kind)
        if index is None:
            return False
        self.bars[index] = self.bars[index].closed(event.timestamp, outcome, event, detail)
        return True

    def mark(self, lane: str, event: Event, detail: str = "") -> None:
        self.markers.append(
            Marker(self.name(lane), event.timestamp, event.kind.value, detail or event.detail, event.seq or 0)
        )

    @staticmethod
    def started(lane: str, kind: str, event: Event, outcome: str, **more: Any) -> Bar:
        return Bar(
            lane,
            kind,
            event.timestamp,
            None,
            outcome,
            kinds=frozenset({event.kind.value}),
            seqs=(event.seq or 0,),
            **more,
        )

    # -------------------------------------------------------------------------------------- attempts

    def step_started(self, event: Event, path: str) -> None:
        backoff = self.end(path, "backoff")
        if backoff is not None:  # a retry that parked in a durable row: the back-off lasted until now
            self.bars[backoff] = self.bars[backoff].closed(event.timestamp, "backed-off", event)
        planned = self.end(path, "attempt")
        if planned is not None and self.bars[planned].outcome == "due":
            self.bars[planned] = replace(
                self.bars[planned],
                start=event.timestamp,
                outcome="running",
                kinds=self.bars[planned].kinds | {event.kind.value},
                seqs=(*self.bars[planned].seqs, event.seq or 0),
            )
            self.open.setdefault((path, "attempt"), []).append(planned)
            return
        if planned is not None:  # a start with one still open: the earlier attempt's outcome is unknown
            self.open[(path, "attempt")].insert(0, planned)
        self.begin(self.started(path, "attempt", event, "running", attempt=self.retries.get(path, 0) + 1))

    def step_retried(self, event: Event, path: str) -> None:
        self.end(path, "backoff")  # the previous back-off, if any, ended when its attempt began
        error = str(event.data.get("error", ""))
        attempt = int(event.data.get("attempt", 0) or 0)
        self.retries[path] = attempt
        if self.unwind_mark is not None and not self.open.get((path, "attempt")):
            self.compensation(event, path, "retried", error)
        elif not self.close(path, "attempt", event, "retried", error):
            self.name(path)
        delay = timedelta(seconds=float(event.data.get("delay", 0) or 0))
        due = event.timestamp + delay
        self.bars.append(
            Bar(
                path,
                "backoff",
                event.timestamp,
                due,
                "backed-off",
                attempt,
                f"retry {attempt} after {duration_text(delay)}",
                due,
                frozenset({event.kind.value}),
                (event.seq or 0,),
            )
        )
        if self.unwind_mark is not None:
            self.unwind_mark = due
            return
        # The next attempt begins when the back-off is due, unless a StepStarted says it began later.
        self.open.setdefault((path, "backoff"), []).append(len(self.bars) - 1)
        nxt = Bar(path, "attempt", due, None, "due", attempt + 1, kinds=frozenset({event.kind.value}))
        self.open.setdefault((path, "attempt"), []).append(len(self.bars))
        self.bars.append(nxt)

    def step_ended(self, event: Event, path: str, outcome: str) -> None:
        self.end(path, "backoff")  # a retry run in-process: its back-off is already closed at its due time
        index = self.end(path, "attempt")
        detail = str(event.data.get("error", "")) if outcome != "completed" else ""
        if index is not None:
            bar = self.bars[index]
            if bar.outcome == "due":  # an in-process retry: it began when its back-off was due
                bar = replace(bar, start=min(bar.start, event.timestamp))
            self.bars[index] = bar.closed(event.timestamp, outcome, event, detail)
            return
        grouped = outcome == "completed" and self.group(event, path)
        if not grouped and not (outcome == "failed" and self.attach_failure(event, path, detail)):
            self.mark(path, event)

    def attach_failure(self, event: Event, path: str, detail: str) -> bool:
        """A StepFailed after a timeout: the attempt the timeout ended is the failed one."""
        for i in range(len(self.bars) - 1, -1, -1):
            bar = self.bars[i]
            if bar.lane == path and bar.kind == "attempt":
                if bar.outcome != "timed-out":
                    return False
                self.bars[i] = bar.closed(bar.end or event.timestamp, "failed", event, detail or bar.detail)
                return True
        return False

    def group(self, event: Event, path: str) -> bool:
        """A composite's completion (foreach, subflow): a bar over its children."""
        children = [b for b in self.bars if b.lane.startswith(f"{path}~")]
        if not children:
            return False
        start = min(b.start for b in children)
        self.name(path)
        self.bars.append(
            Bar(
                path,
                "group",
                start,
                event.timestamp,
                "completed",
                detail=f"{len({b.lane for b in children})} parts",
                kinds=frozenset({event.kind.value}),
                seqs=(event.seq or 0,),
            )
        )
        return True

    # ------------------------------------------------------------------------------- waits, unwind

    def compensation(self, event: Event, lane: str, outcome: str, detail: str = "") -> None:
        start = self.unwind_mark or event.timestamp
        self.name(lane)
        self.bars.append(
            Bar(
                lane,
                "compensation",
                min(start, event.timestamp),
                event.timestamp,
                outcome,
                detail=detail,
                kinds=frozenset({event.kind.value}),
                seqs=(event.seq or 0,),
            )
        )
        self.unwind_mark = event.timestamp

    def resumed(self, event: Event) -> None:
        """The claim's other half: the claim bar says it (a resume with no claim before it, a mark)."""
        claims = [i for i, b in enumerate(self.bars) if b.kind == "claim"]
        if not claims:
            self.mark(EXECUTION_LANE, event)
            return
        bar = self.bars[claims[-1]]
        self.bars[claims[-1]] = replace(
            bar, kinds=bar.kinds | {event.kind.value}, seqs=(*bar.seqs, event.seq or 0)
        )

    def close_unwind(self, at: datetime) -> None:
        if self.unwinds and self.unwinds[-1].end is None:
            self.unwinds[-1] = replace(self.unwinds[-1], end=at)
        self.unwind_mark = None

    # ---------------------------------------------------------------------------------------- events

    def feed(self, event: Event) -> None:
        k, d = event.kind, event.data
        path = _path(event)
        self.seen.add(k.value)
        match k:
            case EventKind.STEP_STARTED:
                self.step_started(event, path)
            case EventKind.STEP_COMPLETED:
                self.step_ended(event, path, "completed")
            case EventKind.STEP_FAILED:
                self.step_ended(event, path, "failed")
            case EventKind.STEP_TIMED_OUT:
                limit = duration_text(timedelta(seconds=float(d.get("timeout", 0) or 0)))
                if not self.close(path, "attempt", event, "timed-out", f"timed out after {limit}"):
                    self.mark(path, event)
            case EventKind.STEP_RETRIED:
                self.step_retried(event, path)
            case EventKind.SLEEP_STARTED:
                due = _instant(d.get("until"))
                self.begin(
                    self.started(path, "sleep", event, "sleeping", due=due, detail=_until_text(due, event))
                )
            case EventKind.SLEEP_COMPLETED:
                heard = f"cancel heard: {d['reason']}" if d.get("reason") else ""
                if not self.close(path, "sleep", event, "completed", heard):
                    self.mark(path, event)
            case EventKind.INPUT_WAITING:
                self.begin(self.started(path, "wait", event, "waiting", detail=f"input {path}"))
            case EventKind.INPUT_RECEIVED | EventKind.INPUT_DISCHARGED:
                outcome = "received" if k is EventKind.INPUT_RECEIVED else "discharged"
                if not self.close(path, "wait", event, outcome, str(d.get("reason", ""))):
                    self.mark(path, event)
            case EventKind.EXECUTION_CLAIMED:
                self.begin(
                    self.started(
                        EXECUTION_LANE, "claim", event, "claimed", detail=str(d.get("executor_id", ""))
                    )
                )
            case EventKind.EXECUTION_RELEASED:
                self.released.append(event.timestamp)
                self.close(EXECUTION_LANE, "claim", event, "released")
            case _:
                self.feed_other(event, path)

    def feed_other(self, event: Event, path: str) -> None:
        k = event.kind
        match k:
            case EventKind.COMPENSATION_STARTED:
                cause = event.data.get("cause") or {}
                said = str(cause.get("error") or cause.get("reason") or cause.get("type", ""))
                self.unwinds.append(Span(event.timestamp, None, said))
                self.unwind_mark = event.timestamp
                self.mark(EXECUTION_LANE, event, said)
            case EventKind.NODE_COMPENSATED:
                self.compensation(event, path, "compensated")
            case EventKind.COMPENSATION_FAILED:
                self.compensation(event, path, "compensation-failed", str(event.data.get("error", "")))
            case EventKind.COMPENSATION_COMPLETED:
                self.close_unwind(event.timestamp)
                self.mark(EXECUTION_LANE, event)
            case EventKind.EXECUTION_RESUMED:
                self.resumed(event)
            case EventKind.INPUT_SUPPLIED:  # a subflow's input, mapped on entry: a mark on the subflow
                self.mark(path.rsplit("~", 1)[0], event)
            case _ if k in _EXECUTION_MARKS:
                if k in _FINISHING:
                    self.finished = event
                    self.close_unwind(event.timestamp)
                elif k is EventKind.RESUMED:
                    self.finished = None
                self.mark(EXECUTION_LANE, event)
            case _:
                self.mark(path or EXECUTION_LANE, event)

    # ------------------------------------------------------------------------------------ the end

    def settle(self) -> None:
        """Bars still open: going on, lost to a race, or abandoned by the ending."""
        finished = self.finished
        for i, bar in enumerate(self.bars):
            if bar.end is not None:
                continue
            if finished is not None and finished.timestamp >= bar.start:
                outcome = "interrupted" if finished.kind is EventKind.STOPPED else "abandoned"
                if bar.kind == "claim":
                    outcome = "released"
                self.bars[i] = replace(bar, end=finished.timestamp, outcome=outcome)
            elif bar.kind in ("sleep", "wait") and self.waiting is not None and bar.lane not in self.waiting:
                end = next((r for r in self.released if r >= bar.start), None)
                self.bars[i] = replace(bar, end=end or bar.start, outcome="abandoned")
            elif bar.outcome == "due":
                self.bars[i] = replace(bar, outcome="backing-off" if bar.start > self.now else "running")


class Fold:
    """The history folded so far, to extend with the events after `seq` (a live execution's timeline
    grows by its new events instead of reading and folding the whole history again). `timeline` settles a
    copy, so the fold goes on."""

    def __init__(self) -> None:
        self.builder = _Builder(datetime.min, None)
        self.builder.name(EXECUTION_LANE)
        self.seq = 0
        self.count = 0

    def extend(self, events: Iterable[Event]) -> Fold:
        for event in events:
            if event.seq is not None and event.seq <= self.seq:
                continue  # already folded (a page read again)
            self.count += 1
            self.builder.feed(event)
            self.seq = event.seq or self.seq
        return self

    def timeline(self, now: datetime, waiting: Collection[str] | None = None) -> Timeline:
        builder = self.builder.copy(now, waiting)
        builder.settle()
        return _assemble(builder, now, self.count, self.seq)


def build(events: Iterable[Event], now: datetime, waiting: Collection[str] | None = None) -> Timeline:
    """The waterfall of `events` (one execution's, in seq order) as of `now`. `waiting`: the paths the
    store holds a wait row for now (a sleep or wait left open and not among them lost its race); None
    when unknown (every open wait is taken as still open)."""
    return Fold().extend(events).timeline(now, waiting)


def _assemble(builder: _Builder, now: datetime, count: int, seq: int) -> Timeline:
    live = builder.finished is None
    bars: dict[str, list[Bar]] = {name: [] for name in builder.order}
    marks: dict[str, list[Marker]] = {name: [] for name in builder.order}
    for bar in builder.bars:
        bars[bar.lane].append(bar)
    for mark in builder.markers:
        marks[mark.lane].append(mark)
    lanes = [Lane(n, tuple(bars[n]), tuple(marks[n])) for n in builder.order if bars[n] or marks[n]]
    instants = [b.start for b in builder.bars] + [m.at for m in builder.markers]
    start = min(instants, default=now)
    ends = [b.until(now) for b in builder.bars] + instants + ([now] if live and instants else [])
    end = max(ends, default=now)
    unwinds, kinds = tuple(builder.unwinds), frozenset(builder.seen)
    return Timeline(start, max(end, start), tuple(lanes), unwinds, live, count, seq, kinds)


# ------------------------------------------------------------------------------------------ words


def _instant(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:  # a malformed deadline draws as a sleep without one
        return None


def _until_text(due: datetime | None, event: Event) -> str:
    return f"for {duration_text(due - event.timestamp)}" if due is not None else ""
