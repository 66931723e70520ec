"""The API's wire shape of a rate limit (`console.rate_limits.Shown`)."""

from __future__ import annotations

from datetime import datetime

from flowdeck.console import rate_limits
from flowdeck.console.schemas import Wire

__all__ = ["RateKeyDto", "RateLimitDto", "rate_limit_of"]


class RateKeyDto(Wire):
    """One key of a per-key limit."""

    key: str
    observed_per_second: float
    taken: int
    reserved: int
    next_free: datetime


class RateLimitDto(Wire):
    """A named rate limit: its configured rate (`configured` in words; `configuredPerSecond`, null when this
    process does not declare it), the rate observed over the last whole minute, the tokens taken at once
    and reserved for later, its keys, the executions rate-limited by it now, and a per-key limit's busiest
    keys."""

    name: str
    configured: str
    configured_per_second: float | None
    per_key: bool
    burst: int | None
    observed_per_second: float
    taken: int
    reserved: int
    keys: int
    rate_limited_now: int
    busiest: list[RateKeyDto]


def rate_limit_of(shown: rate_limits.Shown) -> RateLimitDto:
    return RateLimitDto(
        name=shown.name,
        configured=shown.configured,
        configured_per_second=shown.configured_per_second,
        per_key=shown.per_key,
        burst=shown.limit.burst if shown.limit is not None else None,
        observed_per_second=shown.observed_per_second,
        taken=shown.taken,
        reserved=shown.reserved,
        keys=shown.keys,
        rate_limited_now=shown.limited_now,
        busiest=[
            RateKeyDto(
                key=k.key,
                observed_per_second=k.observed_per_second,
                taken=k.taken,
                reserved=k.reserved,
                next_free=k.next_free,
            )
            for k in shown.busiest
        ],
    )
