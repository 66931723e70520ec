"""Retention on the in-memory store: `purge_ended` and `count_purgeable` over a `MemoryData`, called by
`MemoryStore` under its lock (the rules in store/retention.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from flowdeck.store import counts, retention, spi

if TYPE_CHECKING:
    from flowdeck.store.memory import MemoryData

__all__ = ["PURGED", "count_purgeable", "purge_ended"]

# What a purged execution's entries in `MemoryData.feed` become.
PURGED = ("", 0)


def _matching(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None
) -> list[spi.ExecutionState]:
    kinds = retention.ended_kinds(statuses)
    rows = [r for r in data.executions.values() if retention.purgeable(r, ended_before, kinds, workflow_id)]
    # kind by kind in `retention.ENDED` order, oldest created first (stable: ties keep creation order)
    return sorted(rows, key=lambda row: (kinds.index(retention.kind_of(row.status)), row.created))


def purge_ended(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None, limit: int
) -> int:
    """Delete the first `limit` matches and all they hold. Their feed entries stay, as `PURGED` (ids keep
    their places), and the feed's readers skip them."""
    gone = {row.execution_id for row in _matching(data, ended_before, statuses, workflow_id)[: max(0, limit)]}
    for eid in gone:
        for table in (data.executions, data.fields, data.events, data.progress):
            table.pop(eid, None)
    if gone:  # an id may be used again: its old entries must not name the new execution's events
        data.feed = [PURGED if entry[0] in gone else entry for entry in data.feed]
    return len(gone)


def count_purgeable(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None
) -> list[counts.StatusCount]:
    found = Counter(
        (row.flow_id, retention.kind_of(row.status))
        for row in _matching(data, ended_before, statuses, workflow_id)
    )
    return [counts.StatusCount(wid, kind, n) for (wid, kind), n in sorted(found.items())]
