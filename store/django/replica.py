"""The console's reads on a streaming replica, with the primary behind them.

`ReplicaReads` stands where a `FlowStore` is expected by the parts of the console that only read (the list,
the overview, search, the timeline and history: `console/runtime.reader`). The reads named in `READS` go
to the replica's store; everything else (every write, the live feed's cursor, the clock) goes to the
primary's, so nothing that decides or records anything sees a replica that is behind.

A replica that does not answer (stopped, restarting, unreachable: a retryable store error) is left alone
for `RETRY_AFTER` seconds and its reads go to the primary meanwhile: pages stay up, only the load moves. A
read refused for what it asked (a bad filter) is the caller's answer, from either store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from flowdeck.store import spi

__all__ = ["READS", "RETRY_AFTER", "ReplicaReads"]

log = logging.getLogger(__name__)

READS = frozenset(
    {
        "get_execution",
        "list_executions",
        "get_field",
        "get_all_fields",
        "get_history",
        "get_workflow",
        "list_workflows",
        "list_workflow_versions",
        "nodes_now",
        "node_stats",
        "list_heartbeats",
        "count_by_status",
        "count_by_version",
        "failure_kinds",
        "claims_by_executor",
        "recent_claimers",
        "count_by_code",
        "activity",
        "waiting_longest",
        "ready_backlog",
        "queue_of",
        "limit_counts",
    }
)
"""The reads a replica serves: the console's pages' own. The live feed's (`latest_event_id`, `events_after`,
`event_ids_after`, `wait_for_change`) stay on the primary: its cursor must never run ahead of what the
pages it feeds can read, nor fall behind what the workers wrote."""

RETRY_AFTER = 10.0
"""Seconds a replica that did not answer is left alone before it is tried again."""


class ReplicaReads:
    """`READS` from `replica` (a store on the replica's alias, `DjangoStore(replica=True)`), falling back
    to `primary`; every other attribute is the primary's."""

    def __init__(
        self,
        replica: Any,
        primary: spi.FlowStore,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replica = replica
        self.primary = primary
        self._monotonic = monotonic
        self._resting_until = 0.0

    @property
    def replica_answering(self) -> bool:
        """False while the replica rests after failing to answer (its reads go to the primary)."""
        return self._monotonic() >= self._resting_until

    def __getattr__(self, name: str) -> Any:
        on_primary = getattr(self.primary, name)
        if name not in READS:
            return on_primary
        on_replica = getattr(self.replica, name)

        async def read(*args: Any, **kwargs: Any) -> Any:
            if self.replica_answering:
                try:
                    return await on_replica(*args, **kwargs)
                except spi.FlowStoreError as error:
                    if not error.retryable:
                        raise
                    self._rest(error)
            return await on_primary(*args, **kwargs)

        return read

    async def lag(self) -> float | None:
        """Seconds the replica replays behind the primary; None while it does not answer."""
        if not self.replica_answering:
            return None
        try:
            return float(await self.replica.replica_lag())
        except spi.FlowStoreError as error:
            if not error.retryable:
                raise
            self._rest(error)
            return None

    def _rest(self, error: spi.FlowStoreError) -> None:
        log.warning("the read replica did not answer (%s); reading from the primary for a while", error)
        self._resting_until = self._monotonic() + RETRY_AFTER

    def close(self) -> None:
        """Release the replica's store (the primary's belongs to whoever made it)."""
        self.replica.close()
