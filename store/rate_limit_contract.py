"""The store contract's rate limits (`RateLimitContract`, which `spi.FlowStore` inherits): one atomic take
of a limit key's next token, and the buckets as they stand (store/rate_limits.py says how they move)."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from flowdeck.store import rate_limits

__all__ = ["RateLimitContract"]


class RateLimitContract(abc.ABC):
    """What a store keeps of rate limits (part of `spi.FlowStore`)."""

    @abc.abstractmethod
    async def take_token(self, name: str, key: str, rate: rate_limits.Rate) -> rate_limits.Take:
        """Take the next token of limit `name` for `key` (`""`: the limit as a whole) at the store's now,
        as `rate_limits.step` does, in one atomic step against every other taker of any process: the token
        is due now (taken) or at a later slot this take reserved. A key's first take creates its bucket."""

    @abc.abstractmethod
    async def list_rate_buckets(self, name: str | None = None) -> Sequence[rate_limits.Bucket]:
        """Every bucket (of limit `name` when given), by name then key."""
