"""The memory store's rate limits (`MemoryRateLimits`, a base of `MemoryStore`): a take is one
`rate_limits.step` under the store's lock."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from flowdeck.store import rate_limits

__all__ = ["MemoryRateLimits"]


class MemoryRateLimits:
    """`RateLimitContract` on `self.data.buckets`, under `self._lock`."""

    data: Any
    _lock: threading.RLock

    def now(self) -> datetime:
        raise NotImplementedError

    async def take_token(self, name: str, key: str, rate: rate_limits.Rate) -> rate_limits.Take:
        with self._lock:
            found = self.data.buckets.get((name, key))
            bucket, take = rate_limits.step(found, name, key, rate, self.now())
            self.data.buckets[(name, key)] = bucket
            return take

    async def list_rate_buckets(self, name: str | None = None) -> Sequence[rate_limits.Bucket]:
        with self._lock:
            found: list[rate_limits.Bucket] = [
                b for (n, _), b in sorted(self.data.buckets.items()) if name is None or n == name
            ]
            return found
