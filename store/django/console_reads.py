"""What a console reads of the Django store: heartbeats, counts and per-node numbers, each one read on a
transaction of the store's threads (`DjangoStore._run`), its SQL in the module named beside it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from flowdeck.store import counts, heartbeats, node_stats
from flowdeck.store.django import counts as django_counts
from flowdeck.store.django import heartbeats as django_heartbeats
from flowdeck.store.django import node_stats as django_node_stats

__all__ = ["ConsoleReads"]

R = TypeVar("R")


class ConsoleReads:
    """The console's reads, for `DjangoStore` to inherit (`_run` and `now` are the store's)."""

    async def _run(self, operation: str, work: Callable[[Any], R]) -> R:
        raise NotImplementedError

    def now(self) -> datetime:
        raise NotImplementedError

    async def list_heartbeats(self, fresh_within: timedelta) -> Sequence[heartbeats.RecordedHeartbeat]:
        since = self.now() - fresh_within
        return await self._run("list_heartbeats", functools.partial(django_heartbeats.listed, since=since))

    async def count_by_status(self, workflow_id: str | None = None) -> Sequence[counts.StatusCount]:
        work = functools.partial(django_counts.by_status, workflow_id=workflow_id)
        return await self._run("count_by_status", work)

    async def count_by_version(self, workflow_id: str) -> Sequence[counts.VersionCount]:
        work = functools.partial(django_counts.by_version, workflow_id=workflow_id)
        return await self._run("count_by_version", work)

    async def failure_kinds(self) -> Sequence[str]:
        return await self._run("failure_kinds", django_counts.failure_kinds)

    async def claims_by_executor(self) -> Sequence[counts.ExecutorClaims]:
        work = functools.partial(django_counts.claims_by_executor, now=self.now())
        return await self._run("claims_by_executor", work)

    async def recent_claimers(self, within: timedelta, scan: int = 5000) -> Sequence[counts.RecentClaimer]:
        work = functools.partial(django_counts.recent_claimers, since=self.now() - within, scan=scan)
        return await self._run("recent_claimers", work)

    async def count_by_code(self) -> Sequence[counts.CodeCount]:
        return await self._run("count_by_code", django_counts.by_code)

    async def activity(self, since: datetime, width: timedelta) -> Sequence[counts.ActivityBucket]:
        work = functools.partial(django_counts.activity, since=since, width=width, now=self.now())
        return await self._run("activity", work)

    async def waiting_longest(self, limit: int, retrying: bool = False) -> counts.WaitingPage:
        work = functools.partial(django_counts.waiting_longest, limit=limit, retrying=retrying)
        return await self._run("waiting_longest", work)

    async def ready_backlog(
        self, served: frozenset[tuple[str, str]], cap: int = counts.BACKLOG_CAP
    ) -> counts.Backlog:
        work = functools.partial(django_counts.backlog, served=served, cap=cap, now=self.now())
        return await self._run("ready_backlog", work)

    # ---- what a workflow page reads of each node (store/django/node_stats.py)

    async def nodes_now(
        self, workflow_id: str, scan: int = node_stats.SCAN
    ) -> Sequence[node_stats.NodeCount]:
        work = functools.partial(django_node_stats.nodes_now, workflow_id=workflow_id, scan=scan)
        return await self._run("nodes_now", work)

    async def node_stats(
        self, workflow_id: str, recent: int = node_stats.RECENT
    ) -> Sequence[node_stats.NodeStats]:
        work = functools.partial(django_node_stats.node_stats_of, workflow_id=workflow_id, recent=recent)
        return await self._run("node_stats", work)
