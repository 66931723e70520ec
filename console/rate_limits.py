"""Rate limits as every surface shows them (the API, the CLI, the console's section, the metrics): each
declared limit with its configured rate, the rate observed over the last whole minute (the store's slot
windows, `store.rate_limits.observed_per_second`), the tokens taken at once and reserved for later, the
executions rate-limited now (`rate-limited:<limit>`, the list's filter word) and, for a per-key limit, its
busiest keys. A limit the store has buckets of that this process does not declare is shown too (an older
deployment's), with no configured rate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from flowdeck.console import runtime
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.store import rate_limits, spi

__all__ = ["BUSIEST", "KeyShown", "Shown", "shown", "shown_all"]

BUSIEST = 10  # the keys of a per-key limit shown, busiest first


def rate_text(per_second: float | None) -> str:
    """A rate as every surface writes it: per second from one a second up, per minute below."""
    if per_second is None:
        return "-"
    return f"{per_second:.3g}/s" if per_second >= 1 else f"{per_second * 60:.3g}/min"


@dataclass(frozen=True)
class KeyShown:
    """One key of a per-key limit: its observed rate, its counts, and when its next free token is due."""

    key: str
    observed_per_second: float
    taken: int
    reserved: int
    next_free: datetime

    @property
    def observed(self) -> str:
        return rate_text(self.observed_per_second)


@dataclass(frozen=True)
class Shown:
    """One limit as the surfaces show it."""

    name: str
    limit: RateLimit | None  # None: not declared in this process
    observed_per_second: float
    taken: int
    reserved: int
    keys: int
    limited_now: int
    busiest: tuple[KeyShown, ...] = ()

    @property
    def observed(self) -> str:
        return rate_text(self.observed_per_second)

    @property
    def configured(self) -> str:
        return self.limit.describe() if self.limit is not None else "not declared here"

    @property
    def configured_per_second(self) -> float | None:
        return self.limit.per_second if self.limit is not None else None

    @property
    def per_key(self) -> bool:
        return self.limit is not None and self.limit.per_key


def _key(bucket: rate_limits.Bucket, now: datetime) -> KeyShown:
    observed = rate_limits.observed_per_second(bucket, now)
    return KeyShown(bucket.key, observed, bucket.taken, bucket.reserved, max(bucket.tat, now))


async def shown(
    store: spi.FlowStore, limits: Mapping[str, RateLimit], *, busiest: int = BUSIEST
) -> list[Shown]:
    """Every limit declared in `limits` or with buckets in `store`, by name."""
    now = store.now()
    by_name: dict[str, list[rate_limits.Bucket]] = {name: [] for name in limits}
    for bucket in await store.list_rate_buckets():
        by_name.setdefault(bucket.name, []).append(bucket)
    found = []
    for name in sorted(by_name):
        keys = [_key(b, now) for b in by_name[name]]
        limited = await store.list_executions(None, spi.ExecutionFilter.RateLimited(name), limit=0)
        ranked = sorted(keys, key=lambda k: (-k.observed_per_second, -(k.taken + k.reserved), k.key))
        limit = limits.get(name)
        found.append(
            Shown(
                name,
                limit,
                observed_per_second=sum(k.observed_per_second for k in keys),
                taken=sum(k.taken for k in keys),
                reserved=sum(k.reserved for k in keys),
                keys=len(keys),
                limited_now=limited.total,
                busiest=tuple(ranked[:busiest]) if limit is not None and limit.per_key else (),
            )
        )
    return found


async def shown_all() -> Sequence[Shown]:
    """`shown` for this process: its engine's store and declared limits."""
    engine = await runtime.engine()
    return await shown(engine.store, engine.rate_limits)
