"""The raw SQL of a limited claim (`store.django.concurrency`) and of the console's reads of the queues: the
slots held (a limited row, claimable, under a live lease), the ready rows with room, each stamped. Apart from
`queries` (the catalogue of every other statement) and written the same way: each statement named and
described, with a `postgresql` text where the backends differ.

PostgreSQL claims in ONE statement (`CLAIM_LIMITED_AT_ONCE`) through `flowstore_claim_limited` (migration
0019 creates it, its SQL frozen there): the function takes the advisory locks, then runs
`LIMITED_CANDIDATES` and `LIMITED_STAMP`, handed to it as text, each with a snapshot of its own taken after
the locks, and takes the candidates in order while their groups have room (`store.concurrency.Room`'s rule,
in PL/pgSQL): the candidates' columns are the function's contract (`id`, `flow_id`, `concurrency_limit`,
`concurrency_key`, `concurrency_per_key`, `key_held`, `flow_held`), and so are the parameters each
statement is run with. SQLite counts
and stamps in its IMMEDIATE transaction (`WORKFLOW_SLOTS_HELD`, `CLAIM_LIMITED`, `STAMP_LIMITED`).
"""

from __future__ import annotations

from flowdeck.store.django.queries import (
    CLAIMABLE,
    EXEC_COLS,
    EXEC_COLS_BARE,
    EXECUTION_COLUMNS,
    READY_WHERE,
    Query,
    handed_over,
)

__all__ = [
    "LOCK_SPACE",
    "SCAN",
    "CLAIM_LIMITED",
    "CLAIM_LIMITED_AT_ONCE",
    "LIMITED_CANDIDATES",
    "LIMITED_STAMP",
    "SLOTTED",
    "STAMP_LIMITED",
    "WORKFLOW_SLOTS_HELD",
    "positional_served",
]

LOCK_SPACE = 0x464C4443  # the advisory locks' first key ("FLDC"): Flowdeck's concurrency, no one else's
SCAN = 4  # candidates read per claimable slot asked for (some may share a group that fills in this claim)

_HOLDS = f"h.status_kind IN {CLAIMABLE} AND h.claim_expiry > %(now)s"

WORKFLOW_SLOTS_HELD = Query(
    "workflow_slots_held",
    """SQLite: the slots of workflow limits held now, per workflow among `{flows}` (index
    `fs_exec_slot_holders`).""",
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
    """SQLite: the ready rows of limited versions (`{served}`) in `{order}`, at most `limit`, each with the
    slots of its key held now; rows whose key is full are passed by, and so are the rows under a workflow
    limit of a workflow whose slots are all held (`{full}`: a predicate on those workflows). The caller
    takes them in order while their groups have room (`concurrency.Room`).""",
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
    """SQLite: a limited claim's stamp of one chosen row, if its claim is still free; its columns.""",
    f"""
    UPDATE flowstore_execution
    SET executor = %(executor)s, claim_expiry = %(expiry)s, claim_token = %(token)s, updated = %(now)s
    WHERE id = %(id)s AND (claim_expiry IS NULL OR claim_expiry <= %(now)s)
    RETURNING {EXEC_COLS_BARE}
    """,
)

# ------------------------------------------------------------------------------------------ PostgreSQL

# The types of the columns a limited claim answers (the execution's, then the three it hands over), for the
# column definition list a function returning `SETOF record` is called with. A column of EXECUTION_COLUMNS
# without a type here fails at import.
_TYPES = {
    "id": "varchar",
    "flow_id": "varchar",
    "hash": "varchar",
    "status": "text",
    "executor": "varchar",
    "claim_expiry": "timestamptz",
    "claim_token": "bigint",
    "created": "timestamptz",
    "updated": "timestamptz",
    "cancel_requested": "boolean",
    "cancel_reason": "text",
    "priority": "smallint",
    "concurrency_limit": "integer",
    "concurrency_key": "varchar",
    "concurrency_per_key": "integer",
}
_ANSWER = ", ".join(f"{column} {_TYPES[column]}" for column in EXECUTION_COLUMNS)

CLAIM_LIMITED_AT_ONCE = Query(
    "claim_limited_at_once",
    """PostgreSQL: a limited claim as ONE statement (run in autocommit through group commit, as the unlimited
    claim is): `flowstore_claim_limited` (migration 0019) with its statements' texts, its columns those of
    CLAIM_WITH_LEDGER (`postgres._claim_of` decodes them).""",
    "",
    postgresql=f"""
    SELECT * FROM flowstore_claim_limited(
        %(space)s::integer, %(flows)s::text[], %(candidates)s::text, %(stamp)s::text, %(pair_flows)s::text[],
        %(pair_hashes)s::text[], %(now)s::timestamptz, %(limit)s::integer, %(scan)s::integer,
        %(executor)s::text, %(expiry)s::timestamptz
    ) AS c({_ANSWER}, waits json, fields json, history json)
    """,
)

# PostgreSQL, inside the function: positional parameters ($1 its now, $2 the limited workflows, $3 and $4
# the served pairs' workflows and hashes, $5 how many candidates).
_PG_HOLDS = f"h.status_kind IN {CLAIMABLE} AND h.claim_expiry > $1"
_PG_KEY_HELD = f"""(SELECT COUNT(*) FROM flowstore_execution h
            WHERE h.flow_id = e.flow_id AND h.concurrency_key = e.concurrency_key
              AND h.concurrency_per_key > 0 AND {_PG_HOLDS})"""


def positional_served(pairs: int) -> str:
    """LIMITED_CANDIDATES' `{served}`: ORs of equalities, the i-th served pair as `$3[i]`, `$4[i]` (folded to
    constants when the statement is planned, so the claim indexes serve it as they serve the hot path)."""
    terms = [f"(e.flow_id = $3[{i}] AND e.hash = $4[{i}])" for i in range(1, pairs + 1)]
    return "(" + " OR ".join(terms) + ")" if terms else "FALSE"


LIMITED_CANDIDATES = Query(
    "limited_candidates",
    """PostgreSQL, run by `flowstore_claim_limited` after its locks: CLAIM_LIMITED's candidates (at most $5
    ready rows of the served limited versions, `{served}` from `positional_served`, in `{order}`, each with
    the slots of its key held now, `key_held`, and of its workflow, `flow_held`), passing by the rows whose
    key or workflow is full. The workflows' holders are counted once (`wf`), and only when a candidate has
    a workflow limit. The counts are a LATERAL subquery kept apart (OFFSET 0), so each is computed once per
    row scanned (a subquery's columns pulled up into the filter and the answer were computed twice), and
    the rows still come in the claim index's order, with no sort.""",
    "",
    postgresql=f"""
    WITH wf AS MATERIALIZED (
        SELECT h.flow_id, COUNT(*) AS n FROM flowstore_execution h
        WHERE h.flow_id = ANY($2) AND h.concurrency_limit > 0 AND {_PG_HOLDS}
        GROUP BY h.flow_id
    )
    SELECT e.id, e.flow_id, e.concurrency_limit, e.concurrency_key, e.concurrency_per_key, held.key_held,
        held.flow_held
    FROM flowstore_execution e
    CROSS JOIN LATERAL (
        SELECT CASE WHEN e.concurrency_per_key > 0 THEN {_PG_KEY_HELD} ELSE 0 END AS key_held,
            CASE WHEN e.concurrency_limit > 0
                THEN COALESCE((SELECT wf.n FROM wf WHERE wf.flow_id = e.flow_id), 0) ELSE 0 END AS flow_held
        OFFSET 0
    ) AS held
    WHERE {READY_WHERE.replace("%(now)s", "$1")}
        AND (e.concurrency_per_key = 0 OR held.key_held < e.concurrency_per_key)
        AND (e.concurrency_limit = 0 OR held.flow_held < e.concurrency_limit)
    ORDER BY {{order}}
    LIMIT $5
    """,
)

LIMITED_STAMP = Query(
    "limited_stamp",
    """PostgreSQL, run by `flowstore_claim_limited` with the rows it chose ($1): each stamped for executor
    $2 until $3 under a token from the sequence, if still claimable and free at $4 (a row another
    transaction holds is waited for, then judged again as it committed), and handed over as
    CLAIM_WITH_LEDGER hands its rows over (`queries.handed_over`). The status is judged inside a CASE so
    that the rows are found by the primary key: on a young table (statistics from when it was empty) the
    planner otherwise scanned every claimable row by the claim index for the few chosen.""",
    "",
    postgresql=f"""
    WITH claimed AS (
        UPDATE flowstore_execution e
        SET executor = $2, claim_expiry = $3, claim_token = nextval('flowstore_claim_token'), updated = $4
        WHERE e.id = ANY($1)
            AND CASE WHEN e.status_kind IN {CLAIMABLE} THEN e.claim_expiry IS NULL OR e.claim_expiry <= $4
                ELSE FALSE END
        RETURNING {EXEC_COLS}
    )
    {handed_over("$4")}
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
