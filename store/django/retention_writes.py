"""Retention on the Django store: purging ended executions, each call one short transaction of the store's
threads (`DjangoStore._run`), its SQL in store/django/purge.py."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from flowdeck.store import counts, retention
from flowdeck.store.django import purge as django_purge

__all__ = ["RetentionWrites"]

R = TypeVar("R")


class RetentionWrites:
    """The retention verbs, for `DjangoStore` to inherit (`_run` is the store's)."""

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
        return await self._run(
            "purge_ended", functools.partial(django_purge.purge_ended, what=what, limit=limit)
        )

    async def count_purgeable(
        self, *, ended_before: datetime, statuses: Sequence[str] = (), workflow_id: str | None = None
    ) -> Sequence[counts.StatusCount]:
        what = retention.Purge(ended_before, tuple(statuses), workflow_id)
        return await self._run("count_purgeable", functools.partial(django_purge.count_purgeable, what=what))
