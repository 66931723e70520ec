"""What a workflow page says about each node: how many executions are at it now, how it failed lately and
how long it took (`FlowStore.nodes_now`, `FlowStore.node_stats`).

The store knows no plan, so both are read from what every backend keeps alike: the status, the wait rows
and the history events, keyed by the durable path the events name. The folds live here, once: the memory
store hands them its rows and events, the Django store the rows one bounded query read, so both answer
the same for the same record.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from flowdeck.store.events import EventKind
from flowdeck.store.status import Compensating, Running, Status, Stopped
from flowdeck.store.wakes import Wake, WakeAt

__all__ = [
    "NODE_EVENTS",
    "NodeCount",
    "NodeEvent",
    "NodeStats",
    "RECENT",
    "SCAN",
    "nodes_now",
    "node_stats",
    "percentile",
]

RECENT = 200  # the executions `node_stats` reads: the newest of the workflow
SCAN = 1000  # the unended executions `nodes_now` reads at most: the newest

# The events the folds read, and the payload key naming each one's durable path.
NODE_EVENTS: Mapping[EventKind, str] = {
    EventKind.STEP_STARTED: "step_name",
    EventKind.STEP_COMPLETED: "step_name",
    EventKind.STEP_FAILED: "step_name",
    EventKind.SLEEP_STARTED: "step_name",
    EventKind.SLEEP_COMPLETED: "step_name",
    EventKind.INPUT_WAITING: "input_name",
    EventKind.INPUT_RECEIVED: "input_name",
}
_STARTS = frozenset({EventKind.STEP_STARTED, EventKind.SLEEP_STARTED, EventKind.INPUT_WAITING})
_ENDS = frozenset({EventKind.STEP_COMPLETED, EventKind.SLEEP_COMPLETED, EventKind.INPUT_RECEIVED})
_STEP_ENDS = frozenset({EventKind.STEP_COMPLETED, EventKind.STEP_FAILED})


@dataclass(frozen=True)
class NodeCount:
    """How many unended executions are at the node at `path` now, in one `state`: `running` (a step
    started and neither completed nor failed since, on a running or compensating execution), `waiting` (a
    wait row on a field), `sleeping` (a wait row on a deadline: a sleep, or a retry's back-off, whose row
    `path#retryN` counts at `path`), `stopped` (a Stopped execution, at its status's node)."""

    path: str
    state: str
    executions: int


@dataclass(frozen=True)
class NodeStats:
    """The node at `path` over the newest executions of its workflow: how many times it completed, the
    nearest-rank p50 and p95 of those completions' durations (a node's first start, StepStarted,
    SleepStarted or InputWaiting, to its completion, StepCompleted, SleepCompleted or InputReceived;
    retries included), and the executions in which it failed (a StepFailed event) per failure kind (the
    event's `error_kind`, "" for an untyped failure), by kind."""

    path: str
    completions: int
    p50: timedelta | None
    p95: timedelta | None
    failures: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class NodeEvent:
    """One history event as the folds read it (a backend builds it from its row): in each execution's
    append order."""

    execution_id: str
    kind: EventKind
    path: str
    timestamp: datetime
    error_kind: str = ""


def node_event(execution_id: str, kind: EventKind, data: Mapping[str, object], at: datetime) -> NodeEvent:
    return NodeEvent(
        execution_id, kind, str(data.get(NODE_EVENTS[kind], "")), at, str(data.get("error_kind") or "")
    )


def percentile(sorted_values: Sequence[timedelta], p: float) -> timedelta | None:
    """The nearest-rank percentile: the smallest value with at least p % of the values at or below it."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def _owner(path: str) -> str:
    """A retry back-off's row `charge#retry2` is its node's, `charge`."""
    return path.split("#", 1)[0]


def nodes_now(
    rows: Iterable[tuple[str, Status, Mapping[str, Wake]]], events: Iterable[NodeEvent]
) -> list[NodeCount]:
    """Fold unended executions (id, status, wait rows) and their step events into counts, by path then
    state. An execution is counted once per path and state."""
    found: Counter[tuple[str, str]] = Counter()
    claimable = set()
    for execution_id, status, waits in rows:
        if isinstance(status, Stopped):
            found[(status.node, "stopped")] += 1
            continue
        if isinstance(status, Running | Compensating):
            claimable.add(execution_id)
        states = {(_owner(p), "sleeping" if isinstance(w, WakeAt) else "waiting") for p, w in waits.items()}
        found.update(states)
    last: dict[tuple[str, str], EventKind] = {}
    for event in events:
        if event.kind is EventKind.STEP_STARTED or event.kind in _STEP_ENDS:
            last[(event.execution_id, event.path)] = event.kind
    found.update(
        (path, "running")
        for (execution_id, path), kind in last.items()
        if kind is EventKind.STEP_STARTED and execution_id in claimable
    )
    return [NodeCount(path, state, n) for (path, state), n in sorted(found.items())]


def node_stats(events: Iterable[NodeEvent]) -> list[NodeStats]:
    """Fold the node events of some executions into per-path statistics, by path."""
    began: dict[tuple[str, str], datetime] = {}
    took: dict[str, list[timedelta]] = defaultdict(list)
    failed: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for event in events:
        key = (event.execution_id, event.path)
        if event.kind in _STARTS:
            began.setdefault(key, event.timestamp)
        elif event.kind in _ENDS:
            start = began.pop(key, None)
            if start is not None:
                took[event.path].append(event.timestamp - start)
        elif event.kind is EventKind.STEP_FAILED:
            failed[event.path][event.error_kind].add(event.execution_id)
    stats = []
    for path in sorted({*took, *failed}):
        durations = sorted(took.get(path, ()))
        kinds = tuple((kind, len(ids)) for kind, ids in sorted(failed.get(path, {}).items()))
        stats.append(
            NodeStats(path, len(durations), percentile(durations, 50), percentile(durations, 95), kinds)
        )
    return stats
