"""What the in-memory store answers an operations console: the feed, heartbeats and counts.

Functions over a `MemoryData`, called by `MemoryStore` under its lock; each mirrors what the Django store
reads with one query (store/django/feed.py, counts.py, heartbeats.py)."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from flowdeck.store import counts, feed, heartbeats, spi

if TYPE_CHECKING:
    from flowdeck.store.memory import MemoryData

__all__ = [
    "activity",
    "backlog",
    "claims_by_executor",
    "count_by_code",
    "count_by_status",
    "count_by_version",
    "event_ids_after",
    "events_after",
    "failure_kinds",
    "list_heartbeats",
    "recent_claimers",
    "record_heartbeat",
    "waiting_longest",
]


def _purged(data: MemoryData, event_id: int) -> bool:
    """Whether the feed entry's execution was purged (its entry keeps its place, so ids never move)."""
    return data.feed[event_id - 1][1] == 0


def _feed_event(data: MemoryData, event_id: int) -> tuple[spi.Event, feed.FeedEvent]:
    execution_id, seq = data.feed[event_id - 1]
    event = data.events[execution_id][seq - 1]
    return event, feed.FeedEvent(
        event_id, execution_id, event.flow_id, seq, str(event.kind), event.timestamp, dict(event.data)
    )


def _wanted(data: MemoryData, after: int, gaps: Collection[int]) -> list[int]:
    """The feed's ids above `after` or in `gaps`, purged ones too, in order."""
    newest = len(data.feed)
    return sorted({*(g for g in gaps if 0 < g <= newest), *range(max(after, 0) + 1, newest + 1)})


def event_ids_after(data: MemoryData, after: int, gaps: Collection[int], limit: int) -> list[int]:
    kept = (event_id for event_id in _wanted(data, after, gaps) if not _purged(data, event_id))
    return list(itertools.islice(kept, max(limit, 0)))


def events_after(
    data: MemoryData,
    after: int,
    gaps: Collection[int],
    execution_id: str | None,
    workflow_id: str | None,
    limit: int,
) -> list[feed.FeedEvent]:
    found = []
    for event_id in _wanted(data, after, gaps):
        if len(found) >= limit:
            break
        if _purged(data, event_id):
            continue
        _, event = _feed_event(data, event_id)
        if execution_id is not None and event.execution_id != execution_id:
            continue
        if execution_id is None and workflow_id is not None and event.workflow_id != workflow_id:
            continue
        found.append(event)
    return found


def record_heartbeat(data: MemoryData, beat: heartbeats.Heartbeat, now: datetime) -> None:
    before = data.heartbeats.get(beat.executor_id)
    started = before.started if before is not None else beat.started or now
    fields = {f.name: getattr(beat, f.name) for f in dataclasses.fields(beat)}
    fields.update(started=started, claims_held=tuple(sorted(beat.claims_held)))
    data.heartbeats[beat.executor_id] = heartbeats.RecordedHeartbeat(**fields, updated=now)


def list_heartbeats(data: MemoryData, since: datetime) -> list[heartbeats.RecordedHeartbeat]:
    return [beat for _, beat in sorted(data.heartbeats.items()) if beat.updated >= since]


def _kind(status: spi.Status) -> str:
    return str(spi.status_to_json(status)["type"])


def count_by_status(data: MemoryData, workflow_id: str | None) -> list[counts.StatusCount]:
    found = Counter(
        (row.flow_id, _kind(row.status))
        for row in data.executions.values()
        if workflow_id is None or row.flow_id == workflow_id
    )
    return [counts.StatusCount(wid, kind, n) for (wid, kind), n in sorted(found.items())]


def count_by_version(data: MemoryData, workflow_id: str) -> list[counts.VersionCount]:
    rows = [row for row in data.executions.values() if row.flow_id == workflow_id]
    registered = {h: at for (wid, h), at in data.registered.items() if wid == workflow_id}
    hashes = sorted({*registered, *(row.hash for row in rows)})
    return [
        counts.VersionCount(
            digest,
            registered.get(digest),
            sum(1 for row in rows if row.hash == digest and not row.status.terminal),
            sum(1 for row in rows if row.hash == digest),
        )
        for digest in hashes
    ]


def failure_kinds(data: MemoryData) -> list[str]:
    statuses = [row.status for row in data.executions.values()]
    return sorted({s.kind for s in statuses if isinstance(s, spi.Failed) and s.kind is not None})


def claims_by_executor(data: MemoryData, now: datetime) -> list[counts.ExecutorClaims]:
    held: dict[str, list[str]] = {}
    for row in data.executions.values():
        if row.executor is not None and row.claim_expiry is not None and row.claim_expiry > now:
            held.setdefault(row.executor, []).append(row.execution_id)
    return [counts.ExecutorClaims(executor, tuple(sorted(ids))) for executor, ids in sorted(held.items())]


def recent_claimers(data: MemoryData, since: datetime, scan: int) -> list[counts.RecentClaimer]:
    claims: Counter[str] = Counter()
    last: dict[str, datetime] = {}
    looked = 0
    for event_id in range(len(data.feed), 0, -1):  # newest first
        if _purged(data, event_id):
            continue
        event, _ = _feed_event(data, event_id)
        if event.kind != spi.EventKind.EXECUTION_CLAIMED or event.timestamp < since:
            continue
        looked += 1
        if looked > scan:
            break
        executor = str(event.data.get("executor_id") or "")
        if executor:
            claims[executor] += 1
            last.setdefault(executor, event.timestamp)
    ordered = sorted(last, key=lambda executor: last[executor], reverse=True)
    return [counts.RecentClaimer(executor, claims[executor], last[executor]) for executor in ordered]


def count_by_code(data: MemoryData) -> list[counts.CodeCount]:
    found: Counter[tuple[str, str, str | None]] = Counter()
    for row in data.executions.values():
        if isinstance(row.status, spi.Failed):
            found[(row.flow_id, "failed", row.status.kind)] += 1
        elif isinstance(row.status, spi.Stopped):
            found[(row.flow_id, "stopped", row.status.code)] += 1
    order = sorted(found, key=lambda k: (k[0], k[1], k[2] is not None, k[2] or ""))
    return [counts.CodeCount(wid, status, code, found[(wid, status, code)]) for wid, status, code in order]


def activity(
    data: MemoryData, since: datetime, width: timedelta, now: datetime
) -> list[counts.ActivityBucket]:
    n = counts.bucket_count(since, now, width)
    tally = [[0, 0, 0] for _ in range(n)]

    def add(at: datetime, column: int) -> None:
        # whole seconds, as an SQL store buckets epoch seconds
        index = int((at - since).total_seconds() // 1 // width.total_seconds()) if at >= since else -1
        if 0 <= index < n:
            tally[index][column] += 1

    for row in data.executions.values():
        add(row.created, 0)
        if isinstance(row.status, spi.Completed):
            add(row.updated, 1)
        elif isinstance(row.status, spi.Failed):
            add(row.updated, 2)
    return [counts.ActivityBucket(since + width * i, *tally[i]) for i in range(n)]


def _retrying(state: spi.ExecutionState) -> bool:
    return any(isinstance(w, spi.WakeAt) and counts.RETRY_MARK in p for p, w in state.waits.items())


def waiting_longest(data: MemoryData, limit: int, retrying: bool) -> counts.WaitingPage:
    found = [row for row in data.executions.values() if row.waits and (not retrying or _retrying(row))]
    found.sort(key=lambda row: row.created)  # stable: ties keep creation (insertion) order
    items = [
        counts.Waiting(
            row.execution_id,
            row.flow_id,
            row.created,
            row.updated,
            tuple(sorted(row.waits)),
            min((w.at for w in row.waits.values() if isinstance(w, spi.WakeAt)), default=None),
        )
        for row in found[: max(0, limit)]
    ]
    return counts.WaitingPage(len(found), items)


def backlog(ready: list[spi.ExecutionState], now: datetime, cap: int) -> counts.Backlog:
    """The backlog of the `ready` rows (oldest created first): the first `cap` counted."""
    counted = ready[: max(cap, 0)]
    since = [ready_since(row, now) for row in counted]
    return counts.Backlog(len(counted), len(ready) > len(counted), min(since, default=None))


def ready_since(row: spi.ExecutionState, now: datetime) -> datetime:
    """When a ready row became ready: the later of its last write, its due sleeps' deadlines and its lapsed
    claim's expiry."""
    moments = [row.updated]
    moments += [w.at for w in row.waits.values() if isinstance(w, spi.WakeAt) and w.at <= now]
    if row.claim_expiry is not None and row.claim_expiry <= now:
        moments.append(row.claim_expiry)
    return max(moments)
