"""The Django store's rate limits (`flowstore_rate_bucket`): a take is one statement
(`rate_limit_queries.TAKE_TOKEN`) on the store's threads; the buckets are read through the ORM."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from flowdeck.store import rate_limits
from flowdeck.store.django import models, rate_limit_queries
from flowdeck.store.django.tx import Tx
from flowdeck.store.rate_limits import instant, micros

__all__ = ["RateLimitStore"]

R = TypeVar("R")

_US = timedelta(microseconds=1)


def taken(tx: Tx, name: str, key: str, rate: rate_limits.Rate, now: datetime) -> rate_limits.Take:
    at = micros(now)
    interval, tolerance = rate.interval // _US, rate.tolerance // _US
    params = {
        "name": name,
        "key": key,
        "now": at,
        "interval": interval,
        "tolerance": tolerance,
        "window": rate_limits.WINDOW // _US,
    }
    (tat,) = tx.one(rate_limit_queries.TAKE_TOKEN, params)
    slot = max(at, tat - interval - tolerance)  # the row before: max(tat, now) = tat - interval
    return rate_limits.Take(instant(slot), slot <= at)


def buckets(tx: Tx, name: str | None) -> list[rate_limits.Bucket]:
    rows = models.RateBucket.objects.using(tx.connection.alias).order_by("name", "key")
    if name is not None:
        rows = rows.filter(name=name)
    return [
        rate_limits.Bucket(
            r.name,
            r.key,
            tat=instant(r.tat),
            taken=r.taken,
            reserved=r.reserved,
            window_start=instant(r.window_start),
            window_slots=r.window_slots,
            previous_slots=r.previous_slots,
        )
        for r in rows
    ]


class RateLimitStore:
    """`RateLimitContract` for `DjangoStore` to inherit (`_run` and `now` are the store's)."""

    async def _run(self, operation: str, work: Callable[[Any], R]) -> R:
        raise NotImplementedError

    def now(self) -> datetime:
        raise NotImplementedError

    async def take_token(self, name: str, key: str, rate: rate_limits.Rate) -> rate_limits.Take:
        work = functools.partial(taken, name=name, key=key, rate=rate, now=self.now())
        return await self._run("take_token", work)

    async def list_rate_buckets(self, name: str | None = None) -> Sequence[rate_limits.Bucket]:
        return await self._run("list_rate_buckets", functools.partial(buckets, name=name))
