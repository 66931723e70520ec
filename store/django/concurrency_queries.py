"""The raw SQL of a limited claim (`store.django.concurrency`) and of the console's reads of the queues: the
slots held (a limited row, claimable, under a live lease), the ready rows with room, each stamped. Apart from
`queries` (the catalogue of every other statement) and written the same way: each statement named and
described, with a `postgresql` text where the backends differ.
"""

from __future__ import annotations

from flowdeck.store.django.queries import CLAIMABLE, EXEC_COLS_BARE, READY_WHERE, Query

__all__ = ["CLAIM_LIMITED", "CONCURRENCY_LOCK", "SLOTTED", "STAMP_LIMITED", "WORKFLOW_SLOTS_HELD"]

_HOLDS = f"h.status_kind IN {CLAIMABLE} AND h.claim_expiry > %(now)s"

CONCURRENCY_LOCK = Query(
    "concurrency_lock",
    """PostgreSQL: the transaction's lock on one workflow's limited claims (released at its end), so each
    claimer's counting statement, taken after it, sees every earlier claimer's commit.""",
    "",
    postgresql="SELECT pg_advisory_xact_lock(%(space)s, hashtext(%(flow_id)s))",
)

WORKFLOW_SLOTS_HELD = Query(
    "workflow_slots_held",
    "The slots of workflow limits held now, per workflow among `{flows}` (index `fs_exec_slot_holders`).",
    f"""
    SELECT h.flow_id, COUNT(*) FROM flowstore_execution h
    WHERE h.flow_id IN {{flows}} AND h.concurrency_limit > 0 AND {_HOLDS}
    GROUP BY h.flow_id
    """,
)

# the slots of its key's limit held now, for a ready row `e`
_KEY_HELD = f"""(SELECT COUNT(*) FROM flowstore_execution h
        WHERE h.flow_id = e.flow_id AND h.concurrency_key = e.concurrency_key AND h.concurrency_per_key > 0
          AND {_HOLDS})"""

CLAIM_LIMITED = Query(
    "claim_limited",
    """The ready rows of limited versions (`{served}`) in `{order}`, at most `limit`, each with the slots of
    its key held now; rows whose key is full are passed by, and so are the rows under a workflow limit of a
    workflow whose slots are all held (`{full}`: a predicate on those workflows). The caller takes them in
    order while their groups have room (`concurrency.Room`).""",
    f"""
    SELECT s.id, s.flow_id, s.concurrency_limit, s.concurrency_key, s.concurrency_per_key, s.key_held
    FROM (
        SELECT e.id, e.flow_id, e.concurrency_limit, e.concurrency_key, e.concurrency_per_key,
            e.priority, e.created, e.serial,
            CASE WHEN e.concurrency_per_key > 0 THEN {_KEY_HELD} ELSE 0 END AS key_held
        FROM flowstore_execution e
        WHERE {READY_WHERE} AND NOT {{full}}
    ) AS s
    WHERE s.concurrency_per_key = 0 OR s.key_held < s.concurrency_per_key
    ORDER BY {{order}}
    LIMIT %(limit)s
    """,
)

STAMP_LIMITED = Query(
    "stamp_limited",
    """A limited claim's stamp of one chosen row, if its claim is still free (a write in between, such as
    another path's claim, keeps it); its columns. PostgreSQL takes the token from the sequence.""",
    f"""
    UPDATE flowstore_execution
    SET executor = %(executor)s, claim_expiry = %(expiry)s, claim_token = %(token)s, updated = %(now)s
    WHERE id = %(id)s AND (claim_expiry IS NULL OR claim_expiry <= %(now)s)
    RETURNING {EXEC_COLS_BARE}
    """,
    postgresql=f"""
    UPDATE flowstore_execution
    SET executor = %(executor)s, claim_expiry = %(expiry)s, claim_token = nextval('flowstore_claim_token'),
        updated = %(now)s
    WHERE id = %(id)s AND (claim_expiry IS NULL OR claim_expiry <= %(now)s)
    RETURNING {EXEC_COLS_BARE}
    """,
)

SLOTTED = Query(
    "slotted",
    """The console's reads of the queues: every limited execution of a claimable status (index
    `fs_exec_slot_holders`), whether it holds its slots now, whether it is queued (`ExecutionFilter.Queued`),
    and its place in claim order; of one workflow with `{flow}` (`AND e.flow_id = …`).""",
    f"""
    SELECT e.id, e.flow_id, e.concurrency_limit, e.concurrency_key, e.concurrency_per_key,
        CASE WHEN e.claim_expiry > %(now)s THEN 1 ELSE 0 END,
        CASE WHEN e.status_kind = 'running' AND NOT e.cancel_requested AND e.claim_expiry IS NULL
            AND NOT EXISTS (SELECT 1 FROM flowstore_wait w WHERE w.execution_id = e.id) THEN 1 ELSE 0 END,
        e.priority, e.created
    FROM flowstore_execution e
    WHERE e.status_kind IN {CLAIMABLE} AND (e.concurrency_limit > 0 OR e.concurrency_per_key > 0){{flow}}
    """,
)
