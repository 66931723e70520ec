"""Retention on the Django store: purging ended executions, each call one short transaction of the store's
threads (`DjangoStore._run`), its SQL in store/django/purge.py; on PostgreSQL the history's day partitions
prepared ahead and dropped whole (store/django/partitions.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any, TypeVar

from flowdeck.store import counts, retention
from flowdeck.store.django import partitions
from flowdeck.store.django import purge as django_purge

__all__ = ["RetentionWrites"]

R = TypeVar("R")


class RetentionWrites:
    """The retention verbs, for `DjangoStore` to inherit (`_run` is the store's)."""

    # Whether a purge takes whole day partitions where it can (PostgreSQL, migration 0018); W13 turns it off
    # to measure the batched row delete alone on the same database.
    whole_days = True

    async def _run(self, operation: str, work: Callable[[Any], R]) -> R:
        raise NotImplementedError

    async def purge_ended(
        self,
        *,
        ended_before: datetime,
        statuses: Sequence[str] = (),
        workflow_id: str | None = None,
        limit: int,
    ) -> int:
        what = retention.Purge(ended_before, tuple(statuses), workflow_id)
        known = self.__dict__.setdefault("_droppable_days", {}) if self.whole_days else None
        return await self._run(
            "purge_ended", functools.partial(django_purge.purge_ended, what=what, limit=limit, known=known)
        )

    async def prepare_history(self, first: date, last: date) -> list[date]:
        """PostgreSQL with a partitioned history: a partition for each day of [first, last] that lacks one
        (`partitions.prepare`); answers the days made. Elsewhere nothing."""

        def work(tx: Any) -> list[date]:
            return partitions.prepare(tx, first, last) if partitions.is_partitioned(tx) else []

        return await self._run("prepare_history", work)

    async def count_purgeable(
        self, *, ended_before: datetime, statuses: Sequence[str] = (), workflow_id: str | None = None
    ) -> Sequence[counts.StatusCount]:
        what = retention.Purge(ended_before, tuple(statuses), workflow_id)
        return await self._run("count_purgeable", functools.partial(django_purge.count_purgeable, what=what))
