"""Every raw SQL statement of the Django store, named and described, for PostgreSQL and SQLite.

The ORM serves the reads that are not on a hot path; everything a worker does per node (claim, the
writes under a claim, signal) is here, written so that one call is as few round trips as it can be.

Conventions:
- parameters are named (`%(now)s`); times are the store clock's, passed in, never the database's now(),
  so a `ManualClock` drives every deadline;
- the acceptance rule (token presented AND the store's now before the expiry) sits in the WHERE clause of
  the one UPDATE that opens every write under a claim, and that UPDATE answers the cancel flag, so a write
  needs no separate read;
- a statement that differs between the backends carries a `postgresql` text beside the portable one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

WAKE_CHANNEL = "flowdeck_wake"

TERMINAL = "('completed', 'failed', 'cancelled')"  # the ended status kinds, as an SQL list
_CLAIMABLE = "('running', 'compensating')"
CLAIMABLE = _CLAIMABLE  # the claimable status kinds, as an SQL list

# The columns of an execution row, in the order `rows.execution_state` decodes them.
EXECUTION_COLUMNS = (
    "id",
    "flow_id",
    "hash",
    "status",
    "executor",
    "claim_expiry",
    "claim_token",
    "created",
    "updated",
    "cancel_requested",
    "cancel_reason",
    "priority",
    "concurrency_limit",
    "concurrency_key",
    "concurrency_per_key",
)
EXEC_COLS = ", ".join(f"e.{c}" for c in EXECUTION_COLUMNS)
EXEC_COLS_BARE = ", ".join(EXECUTION_COLUMNS)


@dataclass(frozen=True)
class Query:
    """One named statement. `sql` is portable unless `postgresql` overrides it there."""

    name: str
    doc: str
    sql: str
    postgresql: str | None = None

    def text(self, vendor: str) -> str:
        if vendor == "postgresql" and self.postgresql is not None:
            return self.postgresql
        return self.sql


# ------------------------------------------------------------------------------------------- readiness


def served_predicate(served: Sequence[tuple[str, str]], params: dict[str, Any]) -> str:
    """`(flow_id, hash)` among the served pairs, as ORs of equalities (index-friendly on both backends)."""
    if not served:
        return "FALSE"
    terms = []
    for i, (flow_id, hash_) in enumerate(sorted(served)):
        params[f"sf{i}"] = flow_id
        params[f"sh{i}"] = hash_
        terms.append(f"(e.flow_id = %(sf{i})s AND e.hash = %(sh{i})s)")
    return "(" + " OR ".join(terms) + ")"


# I8, in SQL: claimable status, served version, claim free or expired, and any of: cancel requested, died
# mid-flight (a token left on an expired claim), no wait rows, a satisfied row.
_READY_WHERE = f"""
    e.status_kind IN {_CLAIMABLE}
    AND {{served}}
    AND (e.claim_expiry IS NULL OR e.claim_expiry <= %(now)s)
    AND (
        e.cancel_requested
        OR e.claim_token IS NOT NULL
        OR NOT EXISTS (SELECT 1 FROM flowstore_wait w WHERE w.execution_id = e.id)
        OR EXISTS (
            SELECT 1 FROM flowstore_wait w
            WHERE w.execution_id = e.id
              AND (w.at <= %(now)s
                   OR EXISTS (SELECT 1 FROM flowstore_field f
                              WHERE f.execution_id = e.id AND f.name = w.field_name))
        )
    )
"""

READY_WHERE = _READY_WHERE  # I8 as a predicate on `e` (`{served}` to format in)

# The claim's two orders (`store.claim_order`), each served by an index (`fs_exec_claimable_priority`,
# `fs_exec_claimable`): by priority, highest first, then oldest; a fair-share turn's oldest first.
CLAIM_ORDER = {False: "e.priority DESC, e.created, e.serial", True: "e.created, e.serial"}

CLAIM_READY = Query(
    "claim_ready",
    """SQLite: the ids of up to `limit` ready rows in `{order}` (`CLAIM_ORDER`: by priority, or a fair-share
    turn's oldest first; BEGIN IMMEDIATE already excludes every other writer); STAMP_CLAIM then stamps them.
    PostgreSQL claims with CLAIM_WITH_LEDGER.""",
    f"""
    SELECT e.id FROM flowstore_execution e
    WHERE {_READY_WHERE}
    ORDER BY {{order}}
    LIMIT %(limit)s
    """,
)


def handed_over(now: str) -> str:
    """PostgreSQL: what a claim hands over, selected from its CTE `claimed` (the stamped rows' columns,
    `EXEC_COLS`): each row with its wait rows (and whether each is satisfied at `now`, a parameter's
    placeholder), its fields and its history, as JSON arrays (`postgres._claim_of` decodes them). The
    unlimited claim (CLAIM_WITH_LEDGER) and the limited one (`concurrency_queries.LIMITED_STAMP`) end
    with it."""
    return f"""SELECT c.*,
        (SELECT json_agg(json_build_array(w.path, w.kind, w.at, w.field_name,
                CASE WHEN w.kind = 'at' THEN w.at <= {now}
                     ELSE EXISTS (SELECT 1 FROM flowstore_field f
                                  WHERE f.execution_id = w.execution_id AND f.name = w.field_name) END))
         FROM flowstore_wait w WHERE w.execution_id = c.id),
        (SELECT json_agg(json_build_array(f.name, f.value, f.tag))
         FROM flowstore_field f WHERE f.execution_id = c.id),
        flowstore_claimed_history(c.id, c.created)
    FROM claimed c"""


CLAIM_WITH_LEDGER = Query(
    "claim_with_ledger",
    """PostgreSQL: the claim (ready rows in `{order}`, as CLAIM_READY's, locked with SKIP LOCKED, so
    concurrent claimers pass each other's rows by, I1; stamped with tokens from the sequence) and
    everything it hands over, in ONE statement (run in autocommit: one round trip, one transaction): each
    claimed row with its wait rows (and whether each is satisfied at `now`), its fields and its history, as
    JSON arrays; the history through `flowstore_claimed_history` (migration 0018: planned apart, on the one
    partition of the row's `created`, and only for a row claimed; a subquery here planned every day
    partition on every poll, the empty ones too).""",
    "",
    postgresql=f"""
    WITH ready AS (
        SELECT e.id FROM flowstore_execution e
        WHERE {_READY_WHERE}
        ORDER BY {{order}}
        LIMIT %(limit)s
        FOR UPDATE OF e SKIP LOCKED
    ),
    claimed AS (
        UPDATE flowstore_execution e
        SET executor = %(executor)s, claim_expiry = %(expiry)s,
            claim_token = nextval('flowstore_claim_token'), updated = %(now)s
        FROM ready WHERE e.id = ready.id
        RETURNING {EXEC_COLS}
    )
    {handed_over("%(now)s")}
    """,
)

SORTED_PAGE = Query(
    "sorted_page",
    """PostgreSQL: one page, newest first, of a search's matches materialized first (`{matching}`: the
    search's SELECT of id, `{order}` (created or updated: a column name from `spi.ORDER_BY`, never user
    text), serial, with its own positional parameters), then LIMIT and OFFSET as two more positional
    parameters (a NULL limit: all).""",
    "",
    postgresql="""
    WITH m AS MATERIALIZED ({matching})
    SELECT id FROM m ORDER BY {order} DESC, serial DESC LIMIT %s OFFSET %s
    """,
)

# The jsonb form of a field's value that PostgreSQL's GIN index holds (migration 0007 spells it again, and
# a test EXPLAINs that the index is used): NULL for a value jsonb refuses (a \u0000 escape), so that such a
# value does not fail its write; a field term cannot find it there.
FIELD_JSONB = "(CASE WHEN strpos(value, '\\u0000') = 0 THEN value::jsonb END)"

FIELD_MATCH = Query(
    "field_match",
    """The executions whose field %s holds, exactly, a value at a JSON path (the body of an `id IN`).
    SQLite: the path (`$."key"[0]`), the JSON types the value may have (two of json_type's words), then
    the SQL value json_extract must equal, twice (NULL: the type decides alone). PostgreSQL: a containment
    document (`@>`, which the GIN index answers, over-inclusive for arrays) and a strict jsonpath
    predicate (`@@`, exact: typed comparison, a missing path is no match).""",
    """
    SELECT execution_id FROM flowstore_field
    WHERE name = %s AND json_valid(value)
        AND json_type(value, %s) IN (%s, %s) AND (%s IS NULL OR json_extract(value, %s) = %s)
    """,
    postgresql=f"""
    SELECT execution_id FROM flowstore_field
    WHERE name = %s AND {FIELD_JSONB} @> %s::jsonb AND {FIELD_JSONB} @@ %s::jsonpath
    """,
)

COUNTED_SORTED_PAGE = Query(
    "counted_sorted_page",
    """PostgreSQL: `sorted_page` with every row also carrying the number of matches: a search by a recorded
    value finds its matches once for both (its cost is finding them). An empty page carries no count.""",
    "",
    postgresql="""
    WITH m AS MATERIALIZED ({matching})
    SELECT id, (SELECT count(*) FROM m) FROM m ORDER BY {order} DESC, serial DESC LIMIT %s OFFSET %s
    """,
)

EXECUTION_WITH_WAITS = Query(
    "execution_with_waits",
    """PostgreSQL: one execution's columns and its wait rows (as a JSON array), in one statement.""",
    "",
    postgresql=f"""
    SELECT {EXEC_COLS},
        (SELECT json_agg(json_build_array(w.path, w.kind, w.at, w.field_name))
         FROM flowstore_wait w WHERE w.execution_id = e.id)
    FROM flowstore_execution e WHERE e.id = %(id)s
    """,
)

TAKE_TOKENS = Query(
    "take_tokens",
    "SQLite: reserve `n` claim tokens from the counter row; answers the last one reserved.",
    "UPDATE flowstore_token_counter SET value = value + %(n)s WHERE id = 1 RETURNING value",
)

STAMP_CLAIM = Query(
    "stamp_claim",
    "SQLite: stamp one selected row with its holder, expiry and token.",
    f"""
    UPDATE flowstore_execution
    SET executor = %(executor)s, claim_expiry = %(expiry)s, claim_token = %(token)s, updated = %(now)s
    WHERE id = %(id)s
    RETURNING {EXEC_COLS_BARE}
    """,
)

NEXT_WAKE = Query(
    "next_wake",
    """When a claim found nothing: the earliest instant at which a served row becomes ready with no write
    (a sleep coming due, a lease lapsing), so a blocked caller wakes on its own then.""",
    f"""
    SELECT MIN(t) FROM (
        SELECT MIN(w.at) AS t FROM flowstore_wait w
        JOIN flowstore_execution e ON e.id = w.execution_id
        WHERE e.status_kind IN {_CLAIMABLE} AND {{served}} AND w.at > %(now)s
        UNION ALL
        SELECT MIN(e.claim_expiry) AS t FROM flowstore_execution e
        WHERE e.status_kind IN {_CLAIMABLE} AND {{served}} AND e.claim_expiry > %(now)s
    ) AS soon
    """,
)


def in_list(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """A parenthesized list of named placeholders for `values` (an IN list)."""
    names = []
    for i, value in enumerate(values):
        params[f"{prefix}{i}"] = value
        names.append(f"%({prefix}{i})s")
    return "(" + ", ".join(names) + ")"


WAITS_OF = Query(
    "waits_of",
    "The wait rows of some executions, each with whether the store judges it satisfied at `now`.",
    """
    SELECT w.execution_id, w.path, w.kind, w.at, w.field_name,
        CASE WHEN w.kind = 'at' THEN (w.at <= %(now)s)
             ELSE EXISTS (SELECT 1 FROM flowstore_field f
                          WHERE f.execution_id = w.execution_id AND f.name = w.field_name)
        END AS satisfied
    FROM flowstore_wait w
    WHERE w.execution_id IN {ids}
    """,
)

# ------------------------------------------------------------------------------ writes under a claim

_ACCEPT = "WHERE id = %(id)s AND claim_token = %(token)s AND claim_expiry > %(now)s"
_ANSWER = "RETURNING cancel_requested, cancel_reason, last_seq"

ACCEPT_WRITE = Query(
    "accept_write",
    """Open a write under a claim: applies only under the acceptance rule, reserves `events` seqs and
    answers the cancel flag (for `Claimed.cancel_requested`) and the newest seq. No row: claim lost.""",
    f"UPDATE flowstore_execution SET updated = %(now)s, last_seq = last_seq + %(events)s {_ACCEPT} {_ANSWER}",
)

ACCEPT_STATUS = Query(
    "accept_status",
    "ACCEPT_WRITE that also writes a (non-terminal) status.",
    f"""
    UPDATE flowstore_execution
    SET updated = %(now)s, last_seq = last_seq + %(events)s, status = %(status)s,
        status_kind = %(status_kind)s, failure_kind = %(failure_kind)s, stop_code = %(stop_code)s
    {_ACCEPT} {_ANSWER}
    """,
)

ACCEPT_RELEASE = Query(
    "accept_release",
    "End an attempt with no status change (Suspended): the claim becomes absent.",
    f"""
    UPDATE flowstore_execution
    SET updated = %(now)s, last_seq = last_seq + %(events)s,
        executor = NULL, claim_expiry = NULL, claim_token = NULL
    {_ACCEPT} {_ANSWER}
    """,
)

ACCEPT_RELEASE_STATUS = Query(
    "accept_release_status",
    "End an attempt writing a status (Terminal, Stop): the claim becomes absent.",
    f"""
    UPDATE flowstore_execution
    SET updated = %(now)s, last_seq = last_seq + %(events)s, status = %(status)s,
        status_kind = %(status_kind)s, failure_kind = %(failure_kind)s, stop_code = %(stop_code)s,
        executor = NULL, claim_expiry = NULL, claim_token = NULL
    {_ACCEPT} {_ANSWER}
    """,
)

ACCEPT_COMPLETION = Query(
    "accept_completion",
    """ACCEPT_RELEASE_STATUS for a Completed ending: applies only when the row carries no cancel request,
    judged in the same UPDATE (I2). No row: the claim is lost or a cancel is outstanding (CLAIM_STATE says
    which).""",
    f"""
    UPDATE flowstore_execution
    SET updated = %(now)s, last_seq = last_seq + %(events)s, status = %(status)s,
        status_kind = %(status_kind)s, failure_kind = %(failure_kind)s, stop_code = %(stop_code)s,
        executor = NULL, claim_expiry = NULL, claim_token = NULL
    {_ACCEPT} AND NOT cancel_requested {_ANSWER}
    """,
)

RENEW_CLAIM = Query(
    "renew_claim",
    "I4: move the expiry of a live claim presented with its token.",
    f"UPDATE flowstore_execution SET claim_expiry = %(expiry)s, updated = %(now)s {_ACCEPT} {_ANSWER}",
)

CLAIM_HOLDS = Query(
    "claim_holds",
    "Whether a claim is still this handle's (for refusals that must say claim-lost first).",
    f"SELECT 1 FROM flowstore_execution {_ACCEPT}",
)

CLAIM_STATE = Query(
    "claim_state",
    "The cancel request on a row whose claim is still this handle's (no row: the claim is lost).",
    f"SELECT cancel_requested, cancel_reason FROM flowstore_execution {_ACCEPT}",
)

CLEAR_CANCEL = Query(
    "clear_cancel",
    "Drop a cancel request that a flow listened to (its input took the cancellation as its value).",
    "UPDATE flowstore_execution SET cancel_requested = FALSE, cancel_reason = '' WHERE id = %(id)s",
)

# ------------------------------------------------------------------------------------- ledger rows

INSERT_EVENTS = Query(
    "insert_events",
    "Append events (seqs reserved by the UPDATE that opened the transaction; PostgreSQL: the partition key).",
    "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data) VALUES {rows}",
    postgresql="INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)"
    " SELECT v.*, e.created FROM (VALUES {rows}) AS v JOIN flowstore_execution e ON e.id = %(ev_id)s",
)


def event_rows(
    execution_id: str, first_seq: int, events: Sequence[tuple[str, Any, str]], params: dict, cast: str = ""
) -> str:
    """The VALUES rows of INSERT_EVENTS for `(kind, timestamp, data)` triples numbered from `first_seq`
    (`cast`: the timestamps' type, for PostgreSQL's VALUES list in a FROM)."""
    rows = []
    params["ev_id"] = execution_id
    for i, (flow_id, kind, timestamp, data) in enumerate(events):
        params[f"ev{i}s"] = first_seq + i
        params[f"ev{i}f"] = flow_id
        params[f"ev{i}k"] = kind
        params[f"ev{i}t"] = timestamp
        params[f"ev{i}d"] = data
        rows.append(f"(%(ev_id)s, %(ev{i}s)s, %(ev{i}f)s, %(ev{i}k)s, %(ev{i}t)s{cast}, %(ev{i}d)s)")
    return ", ".join(rows)


INSERT_FIELD_IF_ABSENT = Query(
    "insert_field_if_absent",
    "Write-once field: answers a row only when this call wrote it.",
    """
    INSERT INTO flowstore_field (execution_id, name, value, tag) VALUES (%(id)s, %(name)s, %(value)s, %(tag)s)
    ON CONFLICT (execution_id, name) DO NOTHING RETURNING 1
    """,
)

INSERT_MARK_IF_ABSENT = Query(
    "insert_mark_if_absent",
    "Write-once valueless progress mark: answers a row only when this call wrote it.",
    """
    INSERT INTO flowstore_progress (execution_id, path) VALUES (%(id)s, %(path)s)
    ON CONFLICT (execution_id, path) DO NOTHING RETURNING 1
    """,
)

INSERT_WAIT_IF_ABSENT = Query(
    "insert_wait_if_absent",
    "Put-if-absent a wait row (a replayed sleep keeps its first deadline); a rate limit's row "
    "(`replaces`) takes the new reservation's instant instead.",
    """
    INSERT INTO flowstore_wait (execution_id, path, kind, at, field_name)
    VALUES (%(id)s, %(path)s, %(kind)s, %(at)s, %(field_name)s)
    ON CONFLICT (execution_id, path) DO UPDATE SET at = excluded.at WHERE %(replaces)s
    """,
)

DELETE_WAIT = Query(
    "delete_wait",
    "Retire the wait row at one path.",
    "DELETE FROM flowstore_wait WHERE execution_id = %(id)s AND path = %(path)s",
)

DELETE_WAITS = Query(
    "delete_waits",
    "Retire every wait row of an execution.",
    "DELETE FROM flowstore_wait WHERE execution_id = %(id)s",
)

DELETE_WAITS_EXCEPT = Query(
    "delete_waits_except",
    "Retire every wait row except the listed paths (Suspended keeps exactly those).",
    "DELETE FROM flowstore_wait WHERE execution_id = %(id)s AND path NOT IN {keep}",
)

RECORDED_AT = Query(
    "recorded_at",
    "Whether a path already carries a field or a valueless mark (the operator `answer` is write-once).",
    """
    SELECT EXISTS (SELECT 1 FROM flowstore_field WHERE execution_id = %(id)s AND name = %(path)s)
        OR EXISTS (SELECT 1 FROM flowstore_progress WHERE execution_id = %(id)s AND path = %(path)s)
    """,
)

# ------------------------------------------------------------------------------ store-level writes

CREATE_ROW = """
    INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, failure_kind, stop_code,
        cancel_requested, cancel_reason, last_seq, serial, created, updated, priority,
        concurrency_limit, concurrency_key, concurrency_per_key)
    VALUES (%(id)s, %(flow_id)s, %(hash)s, %(status)s, %(status_kind)s, %(failure_kind)s, %(stop_code)s,
        FALSE, '', 1, {serial}, %(now)s, %(now)s, %(priority)s,
        %(concurrency_limit)s, %(concurrency_key)s, %(concurrency_per_key)s)
    ON CONFLICT (id) DO NOTHING RETURNING {answer}
"""

CREATE_EXECUTION = Query(
    "create_execution",
    """Create the row if the id is free; answers a row only when this call created it. `serial` orders rows
    created at the same instant (from the token source: PostgreSQL's sequence, SQLite's counter).""",
    CREATE_ROW.format(serial="%(serial)s", answer="1"),
    postgresql=CREATE_ROW.format(serial="nextval('flowstore_claim_token')", answer="1"),
)

INSERT_SEED_FIELD = Query(
    "insert_seed_field",
    "A seed field of a newly created execution.",
    """
    INSERT INTO flowstore_field (execution_id, name, value, tag) VALUES (%(id)s, %(name)s, %(value)s, %(tag)s)
    """,
)

CREATE_CLAIMED_ROW = """
    INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, failure_kind, stop_code,
        cancel_requested, cancel_reason, last_seq, serial, created, updated, executor, claim_expiry,
        claim_token, priority, concurrency_limit, concurrency_key, concurrency_per_key)
    VALUES (%(id)s, %(flow_id)s, %(hash)s, %(status)s, %(status_kind)s, %(failure_kind)s, %(stop_code)s,
        FALSE, '', %(last_seq)s, {serial}, %(now)s, %(now)s, %(executor)s, %(expiry)s, {token}, %(priority)s,
        %(concurrency_limit)s, %(concurrency_key)s, %(concurrency_per_key)s)
    ON CONFLICT (id) DO NOTHING RETURNING {answer}
"""

CREATE_CLAIMED = Query(
    "create_claimed",
    """SQLite: CREATE_EXECUTION with the new row already claimed, by `executor` until `expiry` under
    `token` (its `serial` and `token` both reserved with TAKE_TOKENS), `last_seq` its events to come (the
    Created event and those following it). Answers the row's columns (as `rows.execution_state` decodes
    them) only when this call created it.""",
    CREATE_CLAIMED_ROW.format(serial="%(serial)s", token="%(token)s", answer=EXEC_COLS_BARE),
)

OPEN_DELIVERY = Query(
    "open_delivery",
    """Open a signal (I3): lock a row that has not ended and reserve one seq. No row: missing or terminal
    (then LOCK_EXECUTION says which). Serializes with `finish`, so a delivery after the end is refused.""",
    f"""
    UPDATE flowstore_execution SET updated = %(now)s, last_seq = last_seq + 1
    WHERE id = %(id)s AND status_kind NOT IN {TERMINAL}
    RETURNING last_seq
    """,
)

LOCK_EXECUTION = Query(
    "lock_execution",
    "Read one row for a decision made in Python (cancel, operator writes), locked until commit.",
    f"SELECT {EXEC_COLS_BARE}, status_kind, last_seq FROM flowstore_execution WHERE id = %(id)s",
    postgresql=f"""
    SELECT {EXEC_COLS_BARE}, status_kind, last_seq FROM flowstore_execution WHERE id = %(id)s FOR UPDATE
    """,
)

UPDATE_EXECUTION = Query(
    "update_execution",
    "Write a row decided in Python (after LOCK_EXECUTION), with the seqs its events take.",
    """
    UPDATE flowstore_execution
    SET status = %(status)s, status_kind = %(status_kind)s, failure_kind = %(failure_kind)s,
        stop_code = %(stop_code)s, hash = %(hash)s, cancel_requested = %(cancel_requested)s,
        cancel_reason = %(cancel_reason)s, executor = %(executor)s, claim_expiry = %(claim_expiry)s,
        claim_token = %(claim_token)s, last_seq = %(last_seq)s, updated = %(now)s
    WHERE id = %(id)s
    """,
)

GET_EXECUTION = Query(
    "get_execution",
    "One execution row.",
    f"SELECT {EXEC_COLS_BARE} FROM flowstore_execution WHERE id = %(id)s",
)

NOTIFY_WAKE = Query(
    "notify_wake",
    """PostgreSQL: wake blocked `claim_ready` callers of every process, at commit. The payload names the
    sending store, whose own callers were already woken directly.""",
    "",
    postgresql=f"SELECT pg_notify('{WAKE_CHANNEL}', %(origin)s)",
)

LISTEN_WAKE = Query(
    "listen_wake",
    "PostgreSQL: the listener connection's subscription to the wake channel.",
    "",
    postgresql=f"LISTEN {WAKE_CHANNEL}",
)

# --- replica
REPLICA_LAG = Query(
    "replica_lag",
    "PostgreSQL: seconds a replica's replay is behind: 0 once it replayed all it received, or off recovery.",
    "SELECT 0",
    postgresql="SELECT CASE WHEN NOT pg_is_in_recovery()"
    " OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()"
    " THEN 0 ELSE EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp()) END",
)

# ------------------------------------------------------------------------------------- status tally

STATUS_TALLY = Query(
    "status_tally",
    "Executions per workflow per status kind (the overview, /metrics, the list's totals): the sum of the"
    " deltas the triggers of migration 0010 write, with how many delta rows each sum read. {where} is"
    " empty or narrows to a workflow and a kind (store/django/status_tally.py).",
    "SELECT flow_id, status_kind, SUM(n), COUNT(*) FROM flowstore_status_tally {where}"
    " GROUP BY flow_id, status_kind",
)

COMPACT_STATUS_TALLY = Query(
    "compact_status_tally",
    "Fold the tally's deltas into one row per (workflow, kind), dropping the sums that came to zero. On"
    " PostgreSQL one statement, so one snapshot: a delta committed meanwhile is neither summed nor deleted."
    " SQLite's transaction holds the write lock, so its two statements see the same rows.",
    "INSERT INTO flowstore_status_tally (flow_id, status_kind, n)"
    " SELECT flow_id, status_kind, SUM(n) FROM flowstore_status_tally WHERE id <= %(last)s"
    " GROUP BY flow_id, status_kind HAVING SUM(n) <> 0;"
    " DELETE FROM flowstore_status_tally WHERE id <= %(last)s",
    postgresql="""
    WITH gone AS (DELETE FROM flowstore_status_tally RETURNING flow_id, status_kind, n)
    INSERT INTO flowstore_status_tally (flow_id, status_kind, n)
    SELECT flow_id, status_kind, SUM(n) FROM gone GROUP BY flow_id, status_kind HAVING SUM(n) <> 0
    """,
)

LAST_TALLY_ID = Query(
    "last_tally_id",
    "SQLite's compaction: the newest delta it folds.",
    "SELECT COALESCE(MAX(id), 0) FROM flowstore_status_tally",
)

EMPTY_ALL = Query(
    "empty_all",
    # DELETE, on PostgreSQL too: a test's tables hold a few rows, and a TRUNCATE gives each of the 12 tables,
    # the history's partitions and their indexes new files (100-300 ms a reset against 2-7, and the suite
    # resets a PostgreSQL store some 600 times).
    "Tests: empty every flowstore table (the token source keeps counting).",
    "DELETE FROM flowstore_event; DELETE FROM flowstore_wait; DELETE FROM flowstore_field;"
    " DELETE FROM flowstore_progress; DELETE FROM flowstore_execution;"
    " DELETE FROM flowstore_workflow_version; DELETE FROM flowstore_workflow;"
    " DELETE FROM flowstore_heartbeat; DELETE FROM flowstore_status_tally; DELETE FROM flowstore_schedule;"
    " DELETE FROM flowstore_schedule_tick; DELETE FROM flowstore_rate_bucket",
)

DATA_VERSION = Query(
    "data_version",
    "SQLite: a number that changes when another connection commits (the cross-process wake poll).",
    "PRAGMA data_version",
)

LATEST_EVENT_ID = Query(
    "latest_event_id",
    "The console's live feed: the newest event's id (0 for none), where a fresh feed starts.",
    "SELECT COALESCE(MAX(id), 0) FROM flowstore_event",
)

EVENTS_AFTER = Query(
    "events_after",
    """The console's live feed: events above id `after`, plus the ids in `{gaps}` (ids skipped by an earlier
    read whose transactions may still commit: ids are taken at insert, not at commit), narrowed by `{scope}`
    (an execution or a workflow), oldest first.""",
    "SELECT id, execution_id, flow_id, seq, kind FROM flowstore_event"
    " WHERE (id > %(after)s{gaps}){scope} ORDER BY id LIMIT %(limit)s",
)

EVENT_IDS_AFTER = Query(
    "event_ids_after",
    """`events_after`'s read of the ids alone, unscoped: what the console's pages of many executions hear
    (they refresh their rows themselves), without a string decoded or an object made per event.""",
    "SELECT id FROM flowstore_event WHERE (id > %(after)s{gaps}) ORDER BY id LIMIT %(limit)s",
)

EVENTS_AFTER_WITH_DATA = Query(
    "events_after_with_data",
    """`events_after`'s read with each event's time and payload: for a reader folding the feed into numbers
    (the metrics), not for the live pages, which need neither.""",
    "SELECT id, execution_id, flow_id, seq, kind, timestamp, data FROM flowstore_event"
    " WHERE (id > %(after)s{gaps}){scope} ORDER BY id LIMIT %(limit)s",
)

__all__ = [name for name, value in globals().items() if isinstance(value, Query)] + [
    "CLAIMABLE",
    "CLAIM_ORDER",
    "EXEC_COLS_BARE",
    "READY_WHERE",
    "EXECUTION_COLUMNS",
    "EXEC_COLS",
    "CREATE_ROW",
    "CREATE_CLAIMED_ROW",
    "TERMINAL",
    "WAKE_CHANNEL",
    "Query",
    "event_rows",
    "handed_over",
    "in_list",
    "served_predicate",
]


DELIVERY_CLAIMABLE = Query(
    "delivery_claimable",
    """SQLite, after OPEN_DELIVERY and the field's insert: whether the delivery made the row ready for its
    deliverer (claimable status, no live claim, a wait row on field `name`); then STAMP_CLAIM claims it.""",
    f"""
    SELECT 1 FROM flowstore_execution e
    WHERE e.id = %(id)s AND e.status_kind IN {_CLAIMABLE}
      AND (e.claim_expiry IS NULL OR e.claim_expiry <= %(now)s)
      AND EXISTS (SELECT 1 FROM flowstore_wait w WHERE w.execution_id = e.id AND w.field_name = %(name)s)
    """,
)
