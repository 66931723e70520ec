"""What an operations page counts: executions per status and per version, claims per executor, and the
executors that claimed lately. Each is answered by the store in one read (`FlowStore.count_by_status` and
its neighbours), so a page never walks the executions itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "RETRY_MARK",
    "ActivityBucket",
    "CodeCount",
    "ExecutorClaims",
    "RecentClaimer",
    "StatusCount",
    "VersionCount",
    "Waiting",
    "WaitingPage",
]


@dataclass(frozen=True)
class StatusCount:
    """How many executions of a workflow have a status, by the status's wire word (`running`, `stopped`,
    `completed`, ...: `spi.status_to_json(status)["type"]`)."""

    workflow_id: str
    status: str
    executions: int


@dataclass(frozen=True)
class VersionCount:
    """One version of a workflow: when it was first registered (None for a hash only executions name)
    and how many of its executions have not ended, of how many."""

    hash: str
    registered: datetime | None
    unended: int
    total: int


@dataclass(frozen=True)
class ExecutorClaims:
    """The executions an executor holds a live claim on (expiring after the store's now), by id."""

    executor_id: str
    execution_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecentClaimer:
    """An executor that claimed executions lately: how many claims, and when the latest was made."""

    executor_id: str
    claims: int
    last: datetime


@dataclass(frozen=True)
class CodeCount:
    """How many executions of a workflow ended Failed with a failure kind (`status` "failed"), or are
    Stopped with a stop code (`status` "stopped"); `code` None for a failure with no kind."""

    workflow_id: str
    status: str
    code: str | None
    executions: int


@dataclass(frozen=True)
class ActivityBucket:
    """One slice of time `[start, start + width)`: the executions created in it (started), and those whose
    ending as Completed or Failed was written in it (their row's last write, `updated`)."""

    start: datetime
    started: int
    completed: int
    failed: int


MAX_BUCKETS = 1440


def bucket_count(since: datetime, now: datetime, width: timedelta) -> int:
    """How many buckets of `width` from `since` reach the store's now (the last one holds now).

    ValueError for a bucketing a backend cannot answer exactly or boundedly: edges off whole seconds (an
    SQL store buckets epoch seconds), a width not positive, more than `MAX_BUCKETS` buckets."""
    if since.microsecond or width.microseconds or width <= timedelta(0):
        raise ValueError("activity buckets need whole seconds: since and a positive width")
    span = (now - since).total_seconds()
    buckets = int(span // width.total_seconds()) + 1 if span >= 0 else 0
    if buckets > MAX_BUCKETS:
        raise ValueError(f"activity asks {buckets} buckets; at most {MAX_BUCKETS}")
    return buckets


# A durable retry back-off is a sleep row at `<node path>#retry<n>` (engine/bodies.py): its attempt failed
# and the next one is scheduled for the row's `at`.
RETRY_MARK = "#retry"


@dataclass(frozen=True)
class Waiting:
    """An execution with wait rows: when it was created, when its row was last written (it suspended
    then, or was signalled), its rows' paths (sorted), and the earliest `at` among its sleep rows (None
    when it waits on inputs only)."""

    execution_id: str
    workflow_id: str
    created: datetime
    updated: datetime
    paths: tuple[str, ...]
    next_wake: datetime | None


@dataclass(frozen=True)
class WaitingPage:
    total: int
    items: Sequence[Waiting]


# The ready executions a backlog read counts at most (`FlowStore.ready_backlog`): past it, "10,000+".
BACKLOG_CAP = 10_000


@dataclass(frozen=True)
class Backlog:
    """The executions a worker serving the asked versions would claim now and nobody has: how many (at
    most `counts.BACKLOG_CAP`, `capped` when there are more), and the earliest moment one of them became
    ready (`oldest_ready`; None when none is): the later of its row's last write, its due sleep's deadline
    and its lapsed claim's expiry."""

    ready: int
    capped: bool
    oldest_ready: datetime | None
