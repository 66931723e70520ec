"""What the in-memory store answers a workflow page about each node (`nodes_now`, `node_stats`).

Functions over a `MemoryData`, called by `MemoryStore` under its lock: they pick the executions the
Django store's queries pick (store/django/node_stats.py) and hand them to the one fold of
store/node_stats.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from flowdeck.store import node_stats, spi

if TYPE_CHECKING:
    from flowdeck.store.memory import MemoryData

__all__ = ["nodes_now", "node_stats_of"]


def _newest(data: MemoryData, workflow_id: str, unended: bool, limit: int) -> list[spi.ExecutionState]:
    """The workflow's executions, newest created first (the later created first among equal instants)."""
    order = {eid: i for i, eid in enumerate(data.executions)}
    rows = [
        row
        for row in data.executions.values()
        if row.flow_id == workflow_id and not (unended and row.status.terminal)
    ]
    rows.sort(key=lambda row: (row.created, order[row.execution_id]), reverse=True)
    return rows[: max(limit, 0)]


def _events(data: MemoryData, rows: list[spi.ExecutionState]) -> Iterator[node_stats.NodeEvent]:
    for row in rows:
        for event in data.events.get(row.execution_id, ()):
            if event.kind in node_stats.NODE_EVENTS:
                yield node_stats.node_event(row.execution_id, event.kind, event.data, event.timestamp)


def nodes_now(data: MemoryData, workflow_id: str, scan: int) -> list[node_stats.NodeCount]:
    rows = _newest(data, workflow_id, unended=True, limit=scan)
    return node_stats.nodes_now(((r.execution_id, r.status, r.waits) for r in rows), _events(data, rows))


def node_stats_of(data: MemoryData, workflow_id: str, recent: int) -> list[node_stats.NodeStats]:
    return node_stats.node_stats(_events(data, _newest(data, workflow_id, unended=False, limit=recent)))
