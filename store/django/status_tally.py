"""The executions per workflow per status kind, as the database keeps them: `flowstore_status_tally`, the
deltas migration 0010's triggers write as executions are created, change status kind or are deleted.

A count sums the deltas: a handful of rows where counting the executions reads one index entry per row
(an index-only count of 1,000,000 entries took 60-160 ms). The read folds the deltas into one row per
(workflow, kind) once they outnumber the sums by `COMPACT_AFTER`, so whoever counts keeps the table
small: the overview, `/metrics` and the executions list's totals all count here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowdeck.store.django import queries

if TYPE_CHECKING:
    from flowdeck.store.django.tx import Tx

__all__ = ["COMPACT_AFTER", "compact", "sums"]

# How many more delta rows than sums the tally may hold before a count folds them.
COMPACT_AFTER = 256


def sums(tx: Tx, flow_id: str | None = None, status_kind: str | None = None) -> list[tuple[str, str, int]]:
    """(workflow, kind, executions) for every (workflow, kind) the tally has seen, narrowed to `flow_id`
    and `status_kind` when given; a sum can be 0 (all of them deleted or moved on)."""
    params: dict[str, Any] = {}
    clauses = []
    if flow_id is not None:
        params["flow_id"] = flow_id
        clauses.append("flow_id = %(flow_id)s")
    if status_kind is not None:
        params["status_kind"] = status_kind
        clauses.append("status_kind = %(status_kind)s")
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    found = tx.all(queries.STATUS_TALLY, params, where=where)
    if not tx.read_only and sum(deltas for *_, deltas in found) > len(found) + COMPACT_AFTER:
        compact(tx)
    return [(flow, kind, int(n)) for flow, kind, n, _ in found]


def compact(tx: Tx) -> None:
    """Fold every delta into one row per (workflow, kind); the sums stay what they were."""
    if tx.vendor == "postgresql":
        tx.execute(queries.COMPACT_STATUS_TALLY)
        return
    (last,) = tx.one(queries.LAST_TALLY_ID)
    for statement in queries.COMPACT_STATUS_TALLY.text(tx.vendor).split(";"):
        tx.cursor.execute(statement, {"last": last})
