"""The memory store's reads of concurrency limits (`MemoryConcurrency`, a base of `MemoryStore`), under the
store's lock, with the decisions `store.concurrency` writes once for every store."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from flowdeck.store import concurrency, filters
from flowdeck.store.status import Compensating, Running

__all__ = ["MemoryConcurrency"]


class MemoryConcurrency:
    """`ConcurrencyContract` on `self.data.executions`, under `self._lock`."""

    data: Any
    _lock: threading.RLock

    def now(self) -> datetime:
        raise NotImplementedError

    def _slotted(self) -> list[concurrency.Slotted]:
        now = self.now()
        return [
            concurrency.Slotted(
                row.execution_id,
                row.flow_id,
                row.concurrency,
                concurrency.holds_slot(True, row.claim_expiry, now),
                filters.is_queued(row),
                row.priority,
                row.created,
            )
            for row in self.data.executions.values()
            if row.concurrency is not None and isinstance(row.status, Running | Compensating)
        ]

    async def queue_of(self, execution_id: str) -> concurrency.Queued | None:
        with self._lock:
            return concurrency.queue_of(execution_id, self._slotted())

    async def queues_of(self, execution_ids: Sequence[str]) -> Mapping[str, concurrency.Queued]:
        with self._lock:
            return concurrency.queues_of(execution_ids, self._slotted()) if execution_ids else {}

    async def limit_counts(
        self, workflow_id: str | None = None, busiest: int = 10
    ) -> Sequence[concurrency.GroupCount]:
        with self._lock:
            items = [i for i in self._slotted() if workflow_id is None or i.flow_id == workflow_id]
            return concurrency.group_counts(items, busiest)
