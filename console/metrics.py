"""The Prometheus endpoint (`GET /metrics`, guarded as the API is): what every worker host did, read from
the store, which all of them write to.

Workers are other processes, often on other hosts, so nothing is counted where the work runs. Two sources:

- **The event feed, folded at each scrape** (`Fold`): the events written since the previous scrape
  (`FlowStore.events_after`, an id-ordered read of the primary key, bounded per scrape by `MAX_EVENTS`)
  become counters and histograms of this process: executions started and ended, node attempts and their
  durations, retries, and the claim latency (from the moment an execution became ready, its latest
  event or the deadline of its sleep or back-off, to its `ExecutionClaimed`). They count from this
  process's first scrape on, like any Prometheus counter of a process; a restart is a counter reset.
  Ids skipped by one read (taken at insert, seen at commit) are asked for again, as the live feed does.
- **The store's state, read at each scrape** (`read_state`): executions per workflow and state
  (`console.states.count_by_state`: `count_by_status`, on the Django store a read of the status tally its
  triggers keep, with the parked ones, unended on a version nobody serves, as `parked`: one versions read
  per workflow with unended executions, and an indexed count only where some are parked), and every fresh
  heartbeat (workers alive, store and poll failures per executor), and the schedules by state (active,
  paused) with their recorded ticks by outcome (started, skipped, buffered).

Nothing here scans the executions or orders by an unindexed column, so a scrape costs the same at a
million executions as at ten. The README's "Metrics" section lists every metric and example alerts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from flowdeck.console import rate_limits as console_rate_limits
from flowdeck.console import states
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.store import concurrency, counts, feed, heartbeats, spi
from flowdeck.store.events import EventKind as K

__all__ = ["CONTENT_TYPE", "Fold", "StoreState", "node_label", "read_state", "reset", "scrape"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ALL_KEYS = 100_000  # a scrape's read of the limits takes every key's (the oldest queued may be any key's)
MAX_EVENTS = 50_000  # the events one scrape folds at most; the rest wait for the next (see the lag gauge)
TRACKED = 100_000  # the executions (and open attempts) whose latest moment is remembered, newest kept
GAP_SECONDS = 10.0  # how long an id skipped by a read is asked for again
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
ENDINGS = {K.COMPLETED: "completed", K.FAILED: "failed", K.CANCELLED: "cancelled"}
ATTEMPT_ENDS = {
    K.STEP_COMPLETED: "completed",
    K.STEP_FAILED: "failed",
    K.STEP_RETRIED: "retried",
    K.STEP_TIMED_OUT: "timed_out",
}


def node_label(path: str) -> str:
    """A durable path as a label: a foreach item's or loop turn's number becomes `*` and a retry row's
    suffix is dropped, so the label names the node of the plan and the series stay few."""
    segments = path.split("#", 1)[0].split("~")
    return "~".join("*" if segment.isdigit() else segment for segment in segments)


def _bounded(mapping: dict[Any, Any]) -> None:
    while len(mapping) > TRACKED:
        del mapping[next(iter(mapping))]


def _instant(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


@dataclass
class Fold:
    """The feed folded into this process's counters and histograms (its own registry)."""

    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=True))
    cursor: int | None = None
    gaps: dict[int, float] = field(default_factory=dict)
    ready: dict[str, datetime] = field(default_factory=dict)  # execution -> when it became ready
    deadline: dict[str, datetime] = field(default_factory=dict)  # execution -> its sleep's or back-off's
    attempts: dict[tuple[str, str], datetime] = field(default_factory=dict)  # (execution, path) -> start
    behind: int = 0

    def __post_init__(self) -> None:
        r = self.registry
        self.started = Counter(
            "flowdeck_executions_started", "Executions created, by workflow.", ["workflow"], registry=r
        )
        self.ended = Counter(
            "flowdeck_executions_ended",
            "Executions that ended (completed, failed, cancelled), by workflow and status.",
            ["workflow", "status"],
            registry=r,
        )
        self.stopped = Counter(
            "flowdeck_executions_stopped", "Executions that stopped, by workflow and stop code.",
            ["workflow", "code"], registry=r,
        )  # fmt: skip
        self.attempt = Histogram(
            "flowdeck_node_attempt_duration_seconds",
            "A step's attempts, StepStarted to its outcome, by workflow, node and outcome.",
            ["workflow", "node", "outcome"], buckets=DURATION_BUCKETS, registry=r,
        )  # fmt: skip
        self.retries = Counter(
            "flowdeck_node_retries", "Retries scheduled (StepRetried), by workflow and node.",
            ["workflow", "node"], registry=r,
        )  # fmt: skip
        self.transient_retries = Counter(
            "flowdeck_transient_retries",
            "Retries of a step whose body met the world not answering (a locked database, a lost "
            "connection: EngineConfig.transient), by workflow and node.",
            ["workflow", "node"], registry=r,
        )  # fmt: skip
        self.claim_latency = Histogram(
            "flowdeck_claim_latency_seconds",
            "From an execution becoming ready (its latest event, or its sleep's or back-off's deadline) to a "
            "worker claiming it, by workflow.",
            ["workflow"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip

    async def catch_up(self, store: spi.FlowStore) -> None:
        """Fold the events written since the previous call (the first call only starts the cursor)."""
        if self.cursor is None:
            self.cursor = await store.latest_event_id()
            return
        folded = 0
        while folded < MAX_EVENTS:
            now = time.monotonic()
            self.gaps = {g: until for g, until in self.gaps.items() if until > now}
            found = await store.events_after(self.cursor, gaps=sorted(self.gaps), with_data=True)
            for event in found:
                self._advance(event.id, now)
                self.fold(event)
            folded += len(found)
            if len(found) < feed.BATCH:
                break
        self.behind = max(0, await store.latest_event_id() - self.cursor)

    def _advance(self, event_id: int, now: float) -> None:
        assert self.cursor is not None
        if event_id in self.gaps:
            del self.gaps[event_id]
        elif event_id > self.cursor:
            for missing in range(self.cursor + 1, event_id):
                if len(self.gaps) < feed.BATCH:
                    self.gaps[missing] = now + GAP_SECONDS
            self.cursor = event_id

    def fold(self, event: feed.FeedEvent) -> None:
        """One event into the numbers."""
        at, workflow, eid = event.timestamp, event.workflow_id, event.execution_id
        if at is None:
            return
        kind = K(event.kind)
        path = str(event.data.get("step_name", ""))
        if kind is K.CREATED:
            self.started.labels(workflow).inc()
        elif kind in ENDINGS:
            self.ended.labels(workflow, ENDINGS[kind]).inc()
        elif kind is K.STOPPED:
            self.stopped.labels(workflow, str(event.data.get("code", ""))).inc()
        elif kind is K.STEP_STARTED:
            self.attempts[(eid, path)] = at
            _bounded(self.attempts)
        elif kind in ATTEMPT_ENDS:
            self._attempt_ended(event, kind, at, path)
        elif kind is K.SLEEP_STARTED and (until := _instant(event.data.get("until"))) is not None:
            self.deadline[eid] = until
        self._claims(kind, workflow, eid, at)

    def _attempt_ended(self, event: feed.FeedEvent, kind: K, at: datetime, path: str) -> None:
        eid, workflow = event.execution_id, event.workflow_id
        began = self.attempts.pop((eid, path), None)
        if began is not None:
            self.attempt.labels(workflow, node_label(path), ATTEMPT_ENDS[kind]).observe(
                max(0.0, (at - began).total_seconds())
            )
        if kind is K.STEP_RETRIED:
            self.retries.labels(workflow, node_label(path)).inc()
            if event.data.get("transient"):
                self.transient_retries.labels(workflow, node_label(path)).inc()
            delay = timedelta(seconds=float(event.data.get("delay") or 0))
            self.attempts[(eid, path)] = at + delay  # the next attempt begins after the back-off
            self.deadline[eid] = at + delay

    def _claims(self, kind: K, workflow: str, eid: str, at: datetime) -> None:
        if kind is K.EXECUTION_CLAIMED:
            ready = self.ready.pop(eid, None)
            self.deadline.pop(eid, None)
            if ready is not None:
                self.claim_latency.labels(workflow).observe(max(0.0, (at - ready).total_seconds()))
        elif kind in ENDINGS:
            self.ready.pop(eid, None)
            self.deadline.pop(eid, None)
        else:
            deadline = self.deadline.get(eid)
            self.ready[eid] = max(at, deadline) if deadline is not None else at
            _bounded(self.ready)
            _bounded(self.deadline)


@dataclass(frozen=True)
class StoreState:
    """What one scrape read of the store's state (None when the store did not answer)."""

    statuses: tuple[counts.StatusCount, ...] | None
    beats: tuple[heartbeats.RecordedHeartbeat, ...] | None
    behind: int
    schedules: ScheduleState | None = None
    rates: tuple[console_rate_limits.Shown, ...] | None = None
    # each workflow's concurrency limit now (`store.concurrency`), with the scrape's now
    limits: tuple[concurrency.GroupCount, ...] | None = None
    now: datetime | None = None


@dataclass(frozen=True)
class ScheduleState:
    """The schedules by state (active, paused) and their recorded ticks by outcome."""

    by_state: dict[str, int]
    ticks: dict[str, int]


async def _schedule_state(store: spi.FlowStore) -> ScheduleState:
    found = await store.list_schedules()
    paused = sum(1 for s in found if s.paused)
    ticks = {outcome.value: n for outcome, n in (await store.count_ticks()).items()}
    return ScheduleState({"active": len(found) - paused, "paused": paused}, ticks)


async def read_state(
    store: spi.FlowStore,
    fresh_within: timedelta,
    served: frozenset[str] | None = None,
    rate_limits: Mapping[str, RateLimit] | None = None,
) -> StoreState:
    """With `served` (the version hashes some process serves), executions count by state: the parked apart
    from running (`flowdeck.console.states.count_by_state`); without it by status kind. `rate_limits`: the
    declared limits, shown with those the store has buckets of (`console.rate_limits`)."""
    try:
        counted = store.count_by_status() if served is None else states.count_by_state(store, served)
        statuses = tuple(await counted)
        beats = tuple(await store.list_heartbeats(fresh_within))
        scheduled = await _schedule_state(store)
        rates = tuple(await console_rate_limits.shown(store, rate_limits or {}, busiest=0))
        limited = tuple(await store.limit_counts(busiest=ALL_KEYS))
    except spi.FlowStoreError:
        return StoreState(None, None, 0)
    return StoreState(statuses, beats, 0, scheduled, rates, limited, store.now())


class StateCollector(Collector):
    """The store's state as gauges, from the `StoreState` the scrape read just before."""

    def __init__(self, state: StoreState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        state = self.state
        up = GaugeMetricFamily("flowdeck_store_up", "1 if this scrape could read the store, else 0.")
        up.add_metric([], 0 if state.statuses is None else 1)
        yield up
        lag = GaugeMetricFamily(
            "flowdeck_metrics_feed_lag_events", "Events written that this process's counters have not folded."
        )
        lag.add_metric([], state.behind)
        yield lag
        if state.statuses is not None:
            yield _executions(state.statuses)
        if state.beats is not None:
            yield from _heartbeats(state.beats)
        if state.schedules is not None:
            yield from _schedules(state.schedules)
        if state.rates is not None:
            yield from _rates(state.rates)
        if state.limits is not None and state.now is not None:
            yield from _limits(state.limits, state.now)


def _rates(shown: Iterable[console_rate_limits.Shown]) -> Iterator[Metric]:
    tokens = CounterMetricFamily(
        "flowdeck_rate_limit_tokens",
        "Tokens of each rate limit since its buckets were made: taken at once, or reserved for a later slot "
        "(the node waited for it, rate-limited).",
        labels=["limit", "outcome"],
    )
    limited = GaugeMetricFamily(
        "flowdeck_rate_limited_executions", "Executions rate-limited now, by limit.", labels=["limit"]
    )
    observed = GaugeMetricFamily(
        "flowdeck_rate_limit_observed_per_second",
        "Tokens per second over the last whole minute, by limit (every key).",
        labels=["limit"],
    )
    configured = GaugeMetricFamily(
        "flowdeck_rate_limit_configured_per_second", "Each declared limit's rate, per key.", labels=["limit"]
    )
    for s in shown:
        tokens.add_metric([s.name, "taken"], s.taken)
        tokens.add_metric([s.name, "reserved"], s.reserved)
        limited.add_metric([s.name], s.limited_now)
        observed.add_metric([s.name], s.observed_per_second)
        if s.configured_per_second is not None:
            configured.add_metric([s.name], s.configured_per_second)
    yield from (tokens, limited, observed, configured)


def _limits(found: Iterable[concurrency.GroupCount], now: datetime) -> Iterator[Metric]:
    """Per workflow with a concurrency limit: the oldest queued execution's wait (over all its groups: its
    workflow's and its keys'), and the slots of its workflow limit held. The queued themselves are
    `flowdeck_executions{status="queued"}`."""
    oldest: dict[str, datetime | None] = {}
    held: dict[str, int] = {}
    for count in found:
        workflow, since = count.group.flow_id, count.oldest_queued
        known = oldest.get(workflow)
        oldest[workflow] = since if known is None else (known if since is None else min(known, since))
        if count.group.key is None:
            held[workflow] = count.running
    waits = GaugeMetricFamily(
        "flowdeck_oldest_queued_seconds",
        "How long the oldest queued execution of a workflow has waited for a slot (0: none queued).",
        labels=["workflow"],
    )
    for workflow, since in sorted(oldest.items()):
        waits.add_metric([workflow], max(0.0, (now - since).total_seconds()) if since is not None else 0.0)
    slots = GaugeMetricFamily(
        "flowdeck_limit_slots_held", "Slots of a workflow's concurrency limit held now.", labels=["workflow"]
    )
    for workflow, n in sorted(held.items()):
        slots.add_metric([workflow], n)
    yield from (waits, slots)


def _schedules(state: ScheduleState) -> Iterator[Metric]:
    by_state = GaugeMetricFamily(
        "flowdeck_schedules", "Schedules now, by state (active, paused).", labels=["state"]
    )
    for word, n in sorted(state.by_state.items()):
        by_state.add_metric([word], n)
    ticks = GaugeMetricFamily(
        "flowdeck_schedule_ticks",
        "Ticks recorded of the schedules that exist, by outcome (started, skipped, buffered); a deleted "
        "schedule's ticks leave the count.",
        labels=["outcome"],
    )
    for word, n in sorted(state.ticks.items()):
        ticks.add_metric([word], n)
    yield from (by_state, ticks)


def _executions(statuses: Iterable[counts.StatusCount]) -> Metric:
    gauge = GaugeMetricFamily(
        "flowdeck_executions",
        "Executions now, by workflow and state (parked apart from running).",
        labels=["workflow", "status"],
    )
    for row in statuses:
        gauge.add_metric([row.workflow_id, row.status], row.executions)
    return gauge


def _heartbeats(beats: Iterable[heartbeats.RecordedHeartbeat]) -> Iterator[Metric]:
    labels = ["executor", "host"]
    alive = GaugeMetricFamily("flowdeck_workers_alive", "Workers alive, per fresh executor.", labels=labels)
    configured = GaugeMetricFamily(
        "flowdeck_workers_configured", "Workers configured, per fresh executor.", labels=labels
    )
    store_failures = CounterMetricFamily(
        "flowdeck_store_failures",
        "Store operations that failed in an executor since it started (its heartbeat's count).",
        labels=labels,
    )
    poll_failures = CounterMetricFamily(
        "flowdeck_poll_failures", "Claim polls that failed in an executor since it started.", labels=labels
    )
    executors = GaugeMetricFamily("flowdeck_executors", "Executors heard from lately (fresh heartbeats).")
    beats = list(beats)
    for beat in beats:
        names = [beat.executor_id, beat.host]
        alive.add_metric(names, beat.workers_alive)
        configured.add_metric(names, beat.workers_configured)
        store_failures.add_metric(names, beat.store_failures)
        poll_failures.add_metric(names, beat.poll_failures)
    executors.add_metric([], len(beats))
    yield from (executors, alive, configured, store_failures, poll_failures)


_FOLD: Fold | None = None
_LOCK: asyncio.Lock | None = None


def reset() -> None:
    """Forget this process's counters (tests; a new store)."""
    global _FOLD, _LOCK
    _FOLD, _LOCK = None, None


async def scrape(
    store: spi.FlowStore,
    fresh_within: timedelta,
    served: frozenset[str] | None = None,
    rate_limits: Mapping[str, RateLimit] | None = None,
) -> bytes:
    """The exposition text: the feed folded up to now, then the store's state."""
    global _FOLD, _LOCK
    if _FOLD is None or _LOCK is None:
        _FOLD, _LOCK = Fold(), asyncio.Lock()
    fold, lock = _FOLD, _LOCK
    async with lock:
        # a failure is said by flowdeck_store_up below; the next scrape folds what this one could not
        with contextlib.suppress(spi.FlowStoreError):
            await fold.catch_up(store)
        state = await read_state(store, fresh_within, served, rate_limits)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(StateCollector(dataclasses.replace(state, behind=fold.behind)))
        return generate_latest(fold.registry) + generate_latest(registry)
