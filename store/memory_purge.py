"""Retention on the in-memory store: `purge_ended` and `count_purgeable` over a `MemoryData`, called by
`MemoryStore` under its lock (the rules in store/retention.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from store import counts, retention, spi

if TYPE_CHECKING:
    from store.memory import MemoryData

__all__ = ["count_purgeable", "purge_ended"]


def _matching(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None
) -> list[spi.ExecutionState]:
    kinds = retention.ended_kinds(statuses)
    rows = [r for r in data.executions.values() if retention.purgeable(r, ended_before, kinds, workflow_id)]
    return sorted(rows, key=lambda row: row.created)  # stable: ties keep creation order


def purge_ended(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None, limit: int
) -> int:
    """Delete the oldest created `limit` matches and all they hold. Their feed entries stay (ids keep
    their places) and the feed's readers skip them."""
    gone = _matching(data, ended_before, statuses, workflow_id)[: max(0, limit)]
    for row in gone:
        eid = row.execution_id
        for table in (data.executions, data.fields, data.events, data.progress):
            table.pop(eid, None)
    return len(gone)


def count_purgeable(
    data: MemoryData, ended_before: datetime, statuses: Sequence[str], workflow_id: str | None
) -> list[counts.StatusCount]:
    found = Counter(
        (row.flow_id, str(spi.status_to_json(row.status)["type"]))
        for row in _matching(data, ended_before, statuses, workflow_id)
    )
    return [counts.StatusCount(wid, kind, n) for (wid, kind), n in sorted(found.items())]
