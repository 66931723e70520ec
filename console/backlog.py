"""The health page's backlog: what waits for a worker now and how long a claim takes.

- **Ready now** is the store's answer (`FlowStore.ready_backlog`): the executions a worker serving the
  versions some process serves would claim this moment and nobody has, and how long the oldest of them
  has been ready.
- **Claim latency** is the metric `flowdeck_claim_latency_seconds` (`console.metrics.Fold`: from an
  execution becoming ready to its `ExecutionClaimed`), folded by a fold of this page's own, started
  `WINDOW` events back, so the first view already has numbers and `/metrics`' counters are not touched.
  Its p50 and p95 are read off the histogram's buckets as Prometheus' `histogram_quantile` reads them
  (linear within a bucket), so they are estimates at the buckets' resolution.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from flowdeck.console import metrics, states
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import counts, spi

__all__ = ["Backlog", "read", "reset"]

WINDOW = 5_000  # how many events back the page's fold starts: the claims it measures at first sight


@dataclass(frozen=True)
class Backlog:
    """What the page shows: `ready` executions (`capped`: at least that many), how long the oldest has
    been ready, and the claim latency's p50/p95 in seconds over `claims` claims seen (None: none yet)."""

    ready: int
    capped: bool
    oldest_age: timedelta | None
    oldest_ready: datetime | None
    claims: int
    p50: float | None
    p95: float | None


_FOLD: metrics.Fold | None = None
_LOCK: asyncio.Lock | None = None


def reset() -> None:
    """Forget the page's fold (tests; a new store)."""
    global _FOLD, _LOCK
    _FOLD, _LOCK = None, None


async def read(engine: FlowEngine) -> Backlog:
    """The backlog now, over the versions some process serves (an unserved one is parked, not ready)."""
    store = engine.store
    found = await store.ready_backlog(await _served_pairs(engine), counts.BACKLOG_CAP)
    age = None if found.oldest_ready is None else max(store.now() - found.oldest_ready, timedelta(0))
    claims, p50, p95 = await _latency(store)
    return Backlog(found.ready, found.capped, age, found.oldest_ready, claims, p50, p95)


async def _served_pairs(engine: FlowEngine) -> frozenset[tuple[str, str]]:
    """Each workflow with the versions some process serves (`states.served_hashes`, one at a time)."""
    infos = await engine.workflows.list()
    return frozenset((info.id, h) for info in infos for h in states.served_hashes([info]))


async def _latency(store: spi.FlowStore) -> tuple[int, float | None, float | None]:
    global _FOLD, _LOCK
    if _FOLD is None or _LOCK is None:
        _FOLD, _LOCK = metrics.Fold(), asyncio.Lock()
    fold, lock = _FOLD, _LOCK
    async with lock:
        with contextlib.suppress(spi.FlowStoreError):  # the page says the store's trouble elsewhere
            if fold.cursor is None:
                fold.cursor = max(0, await store.latest_event_id() - WINDOW)
            await fold.catch_up(store)
    buckets = _buckets(fold)
    total = buckets[-1][1] if buckets else 0
    if not total:
        return 0, None, None
    return int(total), quantile(buckets, 0.5), quantile(buckets, 0.95)


def _buckets(fold: metrics.Fold) -> list[tuple[float, float]]:
    """The claim latency's cumulative buckets `(upper bound, count)`, every workflow summed, by bound."""
    summed: dict[float, float] = {}
    for family in fold.claim_latency.collect():
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                bound = float(sample.labels["le"])
                summed[bound] = summed.get(bound, 0.0) + sample.value
    return sorted(summed.items())


def quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """The `q` quantile of cumulative `buckets` as `histogram_quantile` estimates it: linear inside the
    bucket it falls in; in the open last bucket, the highest finite bound."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = bound, count
    return lower
