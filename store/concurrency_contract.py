"""The store contract's reads of concurrency limits (Flowdeck, `store.concurrency`): where a queued execution
stands, and each limit's running and queued now. `spi.FlowStore` inherits them."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

from flowdeck.store import concurrency

__all__ = ["ConcurrencyContract"]


class ConcurrencyContract(abc.ABC):
    """What the surfaces read of concurrency limits (part of `spi.FlowStore`)."""

    @abc.abstractmethod
    async def queue_of(self, execution_id: str) -> concurrency.Queued | None:
        """Where the execution waits when it is queued (`ExecutionFilter.Queued`): the full group it waits
        on and its position in that group's line in claim order (1: next). None when it is not queued."""

    @abc.abstractmethod
    async def queues_of(self, execution_ids: Sequence[str]) -> Mapping[str, concurrency.Queued]:
        """`queue_of` for several executions in one read (a list page's rows): each queued one's place,
        keyed by its id; the others are absent."""

    @abc.abstractmethod
    async def limit_counts(
        self, workflow_id: str | None = None, busiest: int = 10
    ) -> Sequence[concurrency.GroupCount]:
        """Each workflow limit now (of one workflow when given): slots held, queued, the oldest queued's
        creation; then the `busiest` key groups (most queued, then most running). Only groups with an
        unended execution of a claimable status appear."""
