"""The Django store's event feed: events after an id (plus the gaps a reader asks for again), the newest
id, and the wait between two reads (the store's wake hub, fed on PostgreSQL by its LISTEN connection).

Each read is a work function for `DjangoStore._run`, on one transaction's `Tx`."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from flowdeck.store import feed
from flowdeck.store.django import queries, rows

if TYPE_CHECKING:
    from flowdeck.store.django.store import Tx

__all__ = ["event_ids_after", "events_after", "latest_event_id"]


def _scope(execution_id: str | None, workflow_id: str | None, params: dict[str, Any]) -> str:
    if execution_id is not None:
        params["execution"] = execution_id
        return " AND execution_id = %(execution)s"
    if workflow_id is not None:
        params["workflow"] = workflow_id
        return " AND flow_id = %(workflow)s"
    return ""


def _gap_sql(gaps: Collection[int]) -> str:
    gap_ids = sorted({int(g) for g in gaps})  # ints only: safe to write into the text
    return f" OR id IN ({', '.join(str(g) for g in gap_ids)})" if gap_ids else ""


def event_ids_after(tx: Tx, after: int, gaps: Collection[int], limit: int) -> list[int]:
    found = tx.all(queries.EVENT_IDS_AFTER, {"after": after, "limit": limit}, gaps=_gap_sql(gaps))
    return [int(row[0]) for row in found]


def events_after(
    tx: Tx,
    after: int,
    gaps: Collection[int],
    execution_id: str | None,
    workflow_id: str | None,
    limit: int,
    with_data: bool = False,
) -> list[feed.FeedEvent]:
    params: dict[str, Any] = {"after": after, "limit": limit}
    query = queries.EVENTS_AFTER_WITH_DATA if with_data else queries.EVENTS_AFTER
    found = tx.all(query, params, gaps=_gap_sql(gaps), scope=_scope(execution_id, workflow_id, params))
    if not with_data:  # the live feed's reads: no payload read, none decoded
        return [feed.FeedEvent(int(r[0]), r[1], r[2], int(r[3]), r[4]) for r in found]
    return [
        feed.FeedEvent(int(r[0]), r[1], r[2], int(r[3]), r[4], rows.to_datetime(r[5]), json.loads(r[6]))
        for r in found
    ]


def latest_event_id(tx: Tx) -> int:
    return int(tx.one(queries.LATEST_EVENT_ID)[0])
