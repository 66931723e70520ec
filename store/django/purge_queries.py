"""The raw SQL of retention (`store.django.purge`): a purge batch's ids, its ledger and rows deleted, and the
dry run's counts. Apart from `queries` (the catalogue of every other statement) and written the same way:
each statement named and described, with a `postgresql` text where the backends differ. The numbers a
search by range reads (migration 0013) go with their fields, by the database's own trigger.
"""

from __future__ import annotations

from flowdeck.store.django.queries import TERMINAL, Query

__all__ = ["COUNT_PURGEABLE", "PURGE_BATCH", "PURGE_EXECUTIONS", "PURGE_LEDGER"]

# An ended row's `updated` is its end (nothing writes to it once ended), and it ended after it was created:
# so `created < before` bounds the scan of the (status_kind, created, serial) index (or its flow_id-led
# twin) that no purge-only index needs to duplicate, and `updated < before` is checked on the rows read.
_PURGEABLE = "status_kind = %(kind)s AND created < %(before)s AND updated < %(before)s{flow}"

PURGE_BATCH = Query(
    "purge_batch",
    """Retention: the ids of at most `limit` executions of one ended status kind that ended before
    `before` (of one workflow with `{flow}`), oldest created first. PostgreSQL locks them and skips rows
    another transaction holds (never a wait); SQLite's write lock already excludes every other writer.""",
    f"SELECT id FROM flowstore_execution WHERE {_PURGEABLE} ORDER BY created, serial LIMIT %(limit)s",
    postgresql=f"""
    SELECT id FROM flowstore_execution WHERE {_PURGEABLE}
    ORDER BY created, serial LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    """,
)

PURGE_LEDGER = tuple(
    Query(
        f"purge_{table}",
        f"Retention: the {table} rows of the executions a batch deletes (before their rows).",
        f"DELETE FROM flowstore_{table} WHERE execution_id IN {{ids}}",
    )
    for table in ("event", "field", "progress", "wait")
)

PURGE_EXECUTIONS = Query(
    "purge_executions",
    "Retention: the execution rows of a batch, ended ones only (a terminal status never reverts, I5).",
    f"DELETE FROM flowstore_execution WHERE id IN {{ids}} AND status_kind IN {TERMINAL}",
)

COUNT_PURGEABLE = Query(
    "count_purgeable",
    "Retention's dry run: what a purge would delete, per workflow and ended status kind.",
    "SELECT flow_id, status_kind, COUNT(*) FROM flowstore_execution"
    " WHERE status_kind IN {kinds} AND created < %(before)s AND updated < %(before)s{flow}"
    " GROUP BY flow_id, status_kind ORDER BY flow_id, status_kind",
)
