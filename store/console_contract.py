"""The store contract's reads for an operations console (Flowdeck): the store's clock, the event feed,
executor heartbeats, the counts its pages show and the ready backlog. `spi.FlowStore` inherits them; their
value types live in store/feed.py, heartbeats.py and counts.py."""

from __future__ import annotations

import abc
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from flowdeck.store import counts, feed, heartbeats

__all__ = ["ConsoleContract"]


class ConsoleContract(abc.ABC):
    """What an operations console reads of a store (part of `spi.FlowStore`)."""

    @abc.abstractmethod
    def now(self) -> datetime:
        """The store's clock: the now its writes stamp and its claim expiries are compared with."""

    @abc.abstractmethod
    async def events_after(
        self,
        after: int,
        *,
        gaps: Collection[int] = (),
        execution_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = feed.BATCH,
        with_data: bool = False,
    ) -> Sequence[feed.FeedEvent]:
        """Every event whose id is above `after` or in `gaps` (ids a reader skipped that may still
        commit), of one execution when `execution_id` is given (else of one workflow when `workflow_id`
        is), by id, at most `limit`. Ids grow in append order across the whole store; on one execution
        they follow its seq. With `with_data`, each also carries its timestamp and payload (for the
        metrics); without, a store may leave them out (a payload can be large)."""

    @abc.abstractmethod
    async def event_ids_after(
        self, after: int, *, gaps: Collection[int] = (), limit: int = feed.BATCH
    ) -> Sequence[int]:
        """The ids alone of `events_after(after, gaps=gaps, limit=limit)` (for the console's list pages)."""

    @abc.abstractmethod
    async def latest_event_id(self) -> int:
        """The newest event's id, 0 for none: a reader starting now asks for the events after it."""

    @abc.abstractmethod
    async def wait_for_change(self, timeout: timedelta) -> None:
        """Return once a write that could make a row ready lands (the writes that wake `claim_ready`: a
        start, a signal, a cancel, a registration; from another process too where the backend hears of
        them), or after `timeout` of monotonic time. A reader of the feed waits here between reads."""

    @abc.abstractmethod
    async def record_heartbeat(self, beat: heartbeats.Heartbeat) -> None:
        """Upsert `beat.executor_id`'s heartbeat, stamped `updated` with the store's now; `started` is
        kept from the executor's first heartbeat (its given value, or the store's now then)."""

    @abc.abstractmethod
    async def list_heartbeats(self, fresh_within: timedelta) -> Sequence[heartbeats.RecordedHeartbeat]:
        """The heartbeats updated within `fresh_within` of the store's now (inclusive), by executor id."""

    @abc.abstractmethod
    async def count_by_status(self, workflow_id: str | None = None) -> Sequence[counts.StatusCount]:
        """Executions per workflow and status word (of one workflow when given), by workflow then status;
        only the pairs with executions."""

    @abc.abstractmethod
    async def count_by_version(self, workflow_id: str) -> Sequence[counts.VersionCount]:
        """Every version of `workflow_id` that is registered or named by an execution, by hash: when it
        was first registered and its unended and total executions."""

    @abc.abstractmethod
    async def failure_kinds(self) -> Sequence[str]:
        """The failure kinds of the Failed executions (every workflow), each once, sorted."""

    @abc.abstractmethod
    async def claims_by_executor(self) -> Sequence[counts.ExecutorClaims]:
        """The live claims (expiring after the store's now), per executor id, by executor then execution."""

    @abc.abstractmethod
    async def recent_claimers(self, within: timedelta, scan: int = 5000) -> Sequence[counts.RecentClaimer]:
        """The executors named by the ExecutionClaimed events stamped within `within` of the store's now
        (the newest `scan` of them at most), latest claim first, with how many of those events each has."""

    @abc.abstractmethod
    async def count_by_code(self) -> Sequence[counts.CodeCount]:
        """The Failed executions per workflow and failure kind, and the Stopped ones per workflow and stop
        code (`CodeCount`), by workflow, then status word, then code (None first); only those with some."""

    @abc.abstractmethod
    async def activity(self, since: datetime, width: timedelta) -> Sequence[counts.ActivityBucket]:
        """Every bucket of `width` from `since` to the store's now (`counts.bucket_count` of them, oldest
        first, empty ones included): the executions created in it, and those whose Completed or Failed row
        was last written in it. `since` and `width` are whole seconds and the buckets at most
        `counts.MAX_BUCKETS` (else ValueError, `counts.bucket_count`); rows stamped after the last
        bucket are not counted."""

    @abc.abstractmethod
    async def waiting_longest(self, limit: int, retrying: bool = False) -> counts.WaitingPage:
        """The executions with wait rows, open the longest first (oldest created; ties in creation order),
        at most `limit`, with how many there are in all; with `retrying`, only those with a retry row (a
        sleep row whose path holds `counts.RETRY_MARK`: the last attempt failed, another is scheduled).

        Oldest created, not oldest `updated`: the creation order is indexed over the unended rows, so
        the page costs `limit` steps at any size; the rows' `updated` says when each last moved."""

    @abc.abstractmethod
    async def ready_backlog(
        self, served: frozenset[tuple[str, str]], cap: int = counts.BACKLOG_CAP
    ) -> counts.Backlog:
        """The executions `claim_ready` would hand a caller serving `served` now (I8; unclaimed, or their
        claim lapsed): how many, counted up to `cap` (`capped` past it, oldest created first), and when
        the earliest of those counted became ready (`counts.Backlog`). Writes nothing, claims nothing."""
