"""Retention on the Django store: `purge_ended` and `count_purgeable` as work functions for
`DjangoStore._run` (one transaction each), with their SQL in `purge_queries` (PURGE_*, COUNT_PURGEABLE).

A batch selects its ids kind by kind from the creation-ordered status index (oldest first; on PostgreSQL
locked with SKIP LOCKED, so a purge never waits on a row another transaction holds), deletes their ledger
rows (events, fields, progress marks, waits) and then the rows themselves, ended ones only. The batch is
the transaction: keep `limit` small (hundreds) and the locks are held for milliseconds. On PostgreSQL with
the history partitioned (migration 0018), whole days go first: `store.django.partitions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowdeck.store import counts, retention
from flowdeck.store.django import partitions, purge_queries, queries

if TYPE_CHECKING:
    from flowdeck.store.django.tx import Tx

__all__ = ["count_purgeable", "purge_ended"]


def _flow(workflow_id: str | None, params: dict[str, Any]) -> str:
    if workflow_id is None:
        return ""
    params["flow"] = workflow_id
    return " AND flow_id = %(flow)s"


def purge_ended(tx: Tx, what: retention.Purge, limit: int, known: partitions.Known | None = None) -> int:
    """Up to `limit` executions: on a partitioned history first whole days (`partitions.purge_whole`), then
    the batched row delete for what they leave."""
    whole = (
        partitions.purge_whole(tx, what, limit, known)
        if known is not None and partitions.is_partitioned(tx)
        else 0
    )
    return whole + _purge_rows(tx, what, limit - whole) if whole < limit else whole


def _purge_rows(tx: Tx, what: retention.Purge, limit: int) -> int:
    params: dict[str, Any] = {"before": what.ended_before}
    flow = _flow(what.workflow_id, params)
    ids: list[str] = []
    for kind in what.statuses:
        if len(ids) >= limit:
            break
        found = tx.all(
            purge_queries.PURGE_BATCH, {**params, "kind": kind, "limit": limit - len(ids)}, flow=flow
        )
        ids.extend(row[0] for row in found)
    if not ids:
        return 0
    id_params: dict[str, Any] = {}
    listed = queries.in_list("p", ids, id_params)
    for query in purge_queries.PURGE_LEDGER:
        tx.execute(query, id_params, ids=listed)
    tx.execute(purge_queries.PURGE_EXECUTIONS, id_params, ids=listed)
    return int(tx.cursor.rowcount)


def count_purgeable(tx: Tx, what: retention.Purge) -> list[counts.StatusCount]:
    params: dict[str, Any] = {"before": what.ended_before}
    flow = _flow(what.workflow_id, params)
    kinds = queries.in_list("k", what.statuses, params)
    found = tx.all(purge_queries.COUNT_PURGEABLE, params, kinds=kinds, flow=flow)
    return [counts.StatusCount(wid, kind, int(n)) for wid, kind, n in found]
