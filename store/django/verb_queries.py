"""PostgreSQL's one-statement verbs: a write under a claim, a start and a signal, each sent as ONE statement
(run in autocommit: one round trip, one transaction). Apart from `queries` (the SQLite forms and every
other statement) and written the same way: each statement named and described, texts built once per shape.
"""

from __future__ import annotations

import functools

from flowdeck.store.django.queries import (
    CLAIMABLE,
    CREATE_CLAIMED_ROW,
    CREATE_ROW,
    EXEC_COLS,
    EXEC_COLS_BARE,
    EXECUTION_COLUMNS,
    TERMINAL,
    WAKE_CHANNEL,
    Query,
)

__all__ = [
    "CREATE_AT_ONCE",
    "CREATE_CLAIMED_AT_ONCE",
    "DELIVER",
    "DELIVER_AND_CLAIM",
    "claimed_write",
    "deferred_wait",
    "event_param_names",
    "opening_history",
    "seed_fields",
]


@functools.cache
def event_param_names(i: int) -> tuple[str, str, str, str]:
    """The parameter names of a claimed write's event `i`: flow id, kind, timestamp, data (built once)."""
    return f"ev{i}f", f"ev{i}k", f"ev{i}t", f"ev{i}d"


@functools.cache  # one text per shape: built once, and psycopg's prepared-statement cache keys on it
def claimed_write(
    *,
    events: int,
    gate: str | None = None,
    extra_fields: int = 0,
    insert_wait: bool = False,
    delete_waits: str | None = None,
    keep: int = 0,
    set_status: bool = False,
    release: bool = False,
    clear_cancel: bool = False,
    notify: bool = False,
    freed: bool = False,
    unless_cancelled: bool = False,
) -> str:
    """PostgreSQL: a whole write under a claim as ONE statement (run in autocommit, so one round trip and
    one transaction). Data-modifying CTEs:

    - `claim` locks the row under the acceptance rule (no row: claim lost, nothing below happens);
    - `go` is the row again, or, with `gate` ("field" / "mark"), only when the write-once insert at
      `%(path)s` wrote (no row: already recorded, nothing below happens), or, with `unless_cancelled` (a
      Completed ending), only when the locked row carries no cancel request: the request and the ending
      are judged in the same statement under the same row lock (I2), so an Accepted cancel is never
      followed by Completed;
    - then, each only through `go`: the extra fields (`%(x{i}n)s`, `%(x{i}v)s`, `%(x{i}t)s`, each if
      absent), the wait row to put if absent (`%(path)s`, `%(kind)s`, `%(at)s`, `%(field_name)s`), the
      wait rows to retire (`delete_waits`: "path", "all", or "except" the `keep` paths `%(keep{i})s`), the
      `events` events (`%(ev{i}f|k|t|d)s`) numbered after the row's newest, and the row itself (updated,
      last_seq, optionally the status columns, the claim released, the cancel request dropped).

    Answers one row when the claim held: (went, cancel_requested, cancel_reason); `went` is false when
    the gate (or `unless_cancelled`) refused, and the cancel columns are then the locked row's. With
    `notify` (an attempt ending Suspended), a fourth column says whether the row
    may now be ready or has a deadline pollers must learn of (a cancel request, no rows kept, a kept row
    satisfied, a kept sleep, or a write that raced it), and only then the statement NOTIFYs the other
    processes' pollers: an execution suspended on inputs nobody gave yet wakes nobody. With `freed` too (a
    limited execution's ending, which gives its slots back), that column is true and the statement NOTIFYs
    whenever the claim held: a queued execution may now have room, and nothing else would wake its
    claimers (the ending's own statement says so; no transaction of its own, store.concurrency).
    """
    parts = [_CLAIM_CTE, _go_cte(gate, unless_cancelled)]
    if extra_fields:
        parts.append(_extra_fields_cte(extra_fields))
    if insert_wait:
        parts.append(_PUT_WAIT_CTE)
    if delete_waits:
        parts.append(_retired_cte(delete_waits, keep))
    if events:
        parts.append(_history_cte(events))
    parts.append(_stamped_cte(events, set_status, release, clear_cancel))
    signal = _wake_columns(keep, freed) if notify else ""
    answer = (
        "stamped.cancel_requested IS NOT NULL, COALESCE(stamped.cancel_requested, claim.cancel_requested), "
        "COALESCE(stamped.cancel_reason, claim.cancel_reason)"
    )
    return "WITH " + ",\n".join(parts) + f"\nSELECT {answer}{signal} FROM claim LEFT JOIN stamped ON TRUE"


# The pieces of `claimed_write`, in the order it chains them.
_CLAIM_CTE = (
    "claim AS (SELECT id, last_seq, cancel_requested, cancel_reason, created FROM flowstore_execution "
    "WHERE id = %(id)s AND claim_token = %(token)s AND claim_expiry > %(now)s FOR UPDATE)"
)

_PUT_WAIT_CTE = (
    "put_wait AS (INSERT INTO flowstore_wait (execution_id, path, kind, at, field_name) "
    "SELECT id, %(path)s, %(kind)s, %(at)s::timestamptz, %(field_name)s FROM go "
    "ON CONFLICT (execution_id, path) DO UPDATE SET at = excluded.at WHERE %(replaces)s)"
)


def _go_cte(gate: str | None, unless_cancelled: bool) -> str:
    """`go`: the claimed row, or only when the write-once `gate` wrote / no cancel request is pending."""
    if gate == "field":
        return (
            "go AS (INSERT INTO flowstore_field (execution_id, name, value, tag) "
            "SELECT id, %(path)s, %(value)s, %(tag)s FROM claim "
            "ON CONFLICT (execution_id, name) DO NOTHING RETURNING execution_id AS id)"
        )
    if gate == "mark":
        return (
            "go AS (INSERT INTO flowstore_progress (execution_id, path) SELECT id, %(path)s FROM claim "
            "ON CONFLICT (execution_id, path) DO NOTHING RETURNING execution_id AS id)"
        )
    if unless_cancelled:
        return "go AS (SELECT id FROM claim WHERE NOT cancel_requested)"
    return "go AS (SELECT id FROM claim)"


def _extra_fields_cte(count: int) -> str:
    rows = ", ".join(f"(%(x{i}n)s, %(x{i}v)s, %(x{i}t)s)" for i in range(count))
    return (
        "extra AS (INSERT INTO flowstore_field (execution_id, name, value, tag) "
        f"SELECT go.id, x.n, x.v, x.t FROM go CROSS JOIN (VALUES {rows}) AS x(n, v, t) "
        "ON CONFLICT (execution_id, name) DO NOTHING)"
    )


def _retired_cte(delete_waits: str, keep: int) -> str:
    if delete_waits == "path":
        where = "AND w.path = %(path)s"
    elif delete_waits == "except":
        where = "AND w.path NOT IN (" + ", ".join(f"%(keep{i})s" for i in range(keep)) + ")" if keep else ""
    else:
        where = ""
    return f"retired AS (DELETE FROM flowstore_wait w USING go WHERE w.execution_id = go.id {where})"


def _history_cte(events: int) -> str:
    rows = ", ".join(
        f"({i + 1}, %(ev{i}f)s, %(ev{i}k)s, %(ev{i}t)s::timestamptz, %(ev{i}d)s)" for i in range(events)
    )
    return (
        "history AS (INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, "
        "exec_created) SELECT claim.id, claim.last_seq + v.n, v.f, v.k, v.t, v.d, claim.created "
        f"FROM claim JOIN go ON go.id = claim.id CROSS JOIN (VALUES {rows}) AS v(n, f, k, t, d))"
    )


def _stamped_cte(events: int, set_status: bool, release: bool, clear_cancel: bool) -> str:
    sets = [f"updated = %(now)s, last_seq = e.last_seq + {events}"]
    if set_status:
        sets.append(
            "status = %(status)s, status_kind = %(status_kind)s, failure_kind = %(failure_kind)s, "
            "stop_code = %(stop_code)s"
        )
    if release:
        sets.append("executor = NULL, claim_expiry = NULL, claim_token = NULL")
    if clear_cancel:
        sets.append("cancel_requested = FALSE, cancel_reason = ''")
    return (
        f"stamped AS (UPDATE flowstore_execution e SET {', '.join(sets)} FROM go WHERE e.id = go.id "
        "RETURNING e.cancel_requested, e.cancel_reason)"
    )


def _wake_columns(keep: int, freed: bool) -> str:
    """`notify`'s fourth column (whether the row may now be ready, or, `freed`, always) and the NOTIFY sent
    only then."""
    kept = "w.path IN (" + ", ".join(f"%(keep{i})s" for i in range(keep)) + ")" if keep else "FALSE"
    # The wait rows and fields as the statement's snapshot has them (its DELETE is not visible to it),
    # narrowed to the kept rows. A write that committed while this statement waited for the row lock
    # (a signal, a cancel) is invisible to that snapshot, but it moved last_seq, which the locked row
    # (`claim`) shows and the snapshot does not: then wake, to be safe.
    wakes = (
        "(stamped.cancel_requested "
        "OR claim.last_seq <> (SELECT s.last_seq FROM flowstore_execution s WHERE s.id = claim.id) "
        "OR NOT EXISTS (SELECT 1 FROM flowstore_wait w "
        f"WHERE w.execution_id = claim.id AND {kept}) OR EXISTS (SELECT 1 FROM flowstore_wait w "
        f"WHERE w.execution_id = claim.id AND {kept} AND (w.kind = 'at' OR EXISTS (SELECT 1 FROM "
        "flowstore_field f WHERE f.execution_id = w.execution_id AND f.name = w.field_name))))"
    )
    if freed:
        wakes = "TRUE"
    return (
        f", {wakes} AS wakes, CASE WHEN stamped.cancel_requested IS NOT NULL AND {wakes} "
        f"THEN pg_notify('{WAKE_CHANNEL}', %(origin)s) END"
    )


CREATE_AT_ONCE = Query(
    "create_at_once",
    """PostgreSQL: a whole `create_execution_if_absent` as ONE statement (run in autocommit: one round
    trip, one transaction). Inserts the row if the id is free (CREATE_EXECUTION's row: last_seq 1, serial
    from the sequence), and only through that insert the seed fields (`{seeds}`, see `seed_fields`), a
    deferred start's wait row (`{deferred}`, see `deferred_wait`) and the Created event as seq 1
    (`%(ev0f|k|t|d)s`), then NOTIFYs the other processes' pollers. Answers a
    row only when this call created the execution; an existing id is left untouched (row, fields and
    history), and a racing create of the same id waits for the first to commit, then finds it.""",
    "",
    postgresql=f"""
    WITH created AS ({CREATE_ROW.format(serial="nextval('flowstore_claim_token')", answer="id, created")}),
    {{seeds}}{{deferred}}
    history AS (
        INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)
        SELECT id, 1, %(ev0f)s, %(ev0k)s, %(ev0t)s::timestamptz, %(ev0d)s, created FROM created
    )
    SELECT id, pg_notify('{WAKE_CHANNEL}', %(origin)s) FROM created
    """,
)


_NEXTVAL = "nextval('flowstore_claim_token')"

CREATE_CLAIMED_AT_ONCE = Query(
    "create_claimed_at_once",
    """PostgreSQL: a whole `create_claimed_if_absent` as ONE statement (run in autocommit: one round trip,
    one transaction). CREATE_AT_ONCE with the new row already claimed by `executor` until `expiry`, under a
    fresh token from the sequence (its serial is another value of it), the Created event and the events
    following it (`{{history}}`, see `opening_history`; `last_seq` their count), and no NOTIFY: nobody else
    may claim the row until that lease lapses. Answers the row's columns (as `rows.execution_state` decodes
    them) only when this call created it; an existing id is left untouched (row, claim, fields and
    history).""",
    "",
    postgresql=f"""
    WITH created AS ({CREATE_CLAIMED_ROW.format(serial=_NEXTVAL, token=_NEXTVAL, answer=EXEC_COLS_BARE)}),
    {{seeds}}
    history AS (
        INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)
        SELECT created.id, v.n, v.f, v.k, v.t, v.d, created.created
        FROM created CROSS JOIN (VALUES {{history}}) AS v(n, f, k, t, d)
    )
    SELECT {EXEC_COLS_BARE} FROM created
    """,
)


@functools.cache
def opening_history(events: int) -> str:
    """CREATE_CLAIMED_AT_ONCE's `{history}`: the VALUES rows of the Created event and those following it,
    numbered from 1 (`%(ev{i}f|k|t|d)s`, as `event_param_names` names them)."""
    return ", ".join(
        f"({i + 1}, %(ev{i}f)s, %(ev{i}k)s, %(ev{i}t)s::timestamptz, %(ev{i}d)s)" for i in range(events)
    )


def deferred_wait(deferred: bool) -> str:
    """CREATE_AT_ONCE's `{deferred}`: a deferred start's wait row (`store.deferral`: path `%(dp)s`, due at
    `%(dat)s`) written through the created row; nothing for an ordinary start."""
    if not deferred:
        return ""
    return (
        "deferred AS (INSERT INTO flowstore_wait (execution_id, path, kind, at, field_name) "
        "SELECT id, %(dp)s, 'at', %(dat)s::timestamptz, NULL FROM created),"
    )


def seed_fields(count: int) -> str:
    """CREATE_AT_ONCE's and CREATE_CLAIMED_AT_ONCE's `{seeds}`: the CTE writing `count` seed fields
    through the created row."""
    if not count:
        return ""
    rows = ", ".join(f"(%(s{i}n)s, %(s{i}v)s, %(s{i}t)s)" for i in range(count))
    return (
        "seeded AS (INSERT INTO flowstore_field (execution_id, name, value, tag) "
        f"SELECT created.id, s.n, s.v, s.t FROM created CROSS JOIN (VALUES {rows}) AS s(n, v, t)),"
    )


# A delivery's writes after its `locked` CTE: the field only if absent (`go`: a row when it was written),
# then its event numbered after the row's newest.
_DELIVERY_WRITES = """go AS (
        INSERT INTO flowstore_field (execution_id, name, value, tag)
        SELECT id, %(name)s, %(value)s, %(tag)s FROM locked
        ON CONFLICT (execution_id, name) DO NOTHING RETURNING execution_id AS id
    ),
    history AS (
        INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)
        SELECT locked.id, locked.last_seq + 1, %(ev0f)s, %(ev0k)s, %(ev0t)s::timestamptz, %(ev0d)s,
            locked.created FROM locked JOIN go ON go.id = locked.id
    ),"""

DELIVER = Query(
    "deliver",
    """PostgreSQL: a whole `signal` as ONE statement (I3). Locks the row if it has not ended, writes the
    field only if absent, and only then appends the event, bumps the row and NOTIFYs. Answers (locked,
    delivered, status as of the statement's snapshot): not locked means missing or ended; then the status
    says which (a status still running means the row ended while this statement waited for its lock: ask
    again the slow way).""",
    "",
    postgresql=f"""
    WITH locked AS (
        SELECT id, last_seq, created FROM flowstore_execution
        WHERE id = %(id)s AND status_kind NOT IN {TERMINAL} FOR UPDATE
    ),
    {_DELIVERY_WRITES}
    stamped AS (
        UPDATE flowstore_execution e SET updated = %(now)s, last_seq = e.last_seq + 1
        FROM go WHERE e.id = go.id RETURNING e.id
    )
    SELECT EXISTS (SELECT 1 FROM locked), EXISTS (SELECT 1 FROM stamped),
        (SELECT status FROM flowstore_execution WHERE id = %(id)s),
        CASE WHEN EXISTS (SELECT 1 FROM go) THEN pg_notify('{WAKE_CHANNEL}', %(origin)s) END
    """,
)

_LEDGER_OF_CLAIMED = """
        (SELECT json_agg(json_build_array(w.path, w.kind, w.at, w.field_name,
                CASE WHEN w.kind = 'at' THEN w.at <= %(now)s
                     ELSE w.field_name = %(name)s
                          OR EXISTS (SELECT 1 FROM flowstore_field f
                                     WHERE f.execution_id = w.execution_id AND f.name = w.field_name) END))
         FROM flowstore_wait w WHERE w.execution_id = c.id),
        (SELECT json_agg(json_build_array(f.name, f.value, f.tag)) FROM (
            SELECT name, value, tag FROM flowstore_field WHERE execution_id = c.id
            UNION ALL SELECT %(name)s, %(value)s, %(tag)s WHERE c.id IS NOT NULL) f),
        (SELECT json_agg(json_build_array(v.seq, v.flow_id, v.kind, v.timestamp, v.data) ORDER BY v.seq)
         FROM (SELECT seq, flow_id, kind, timestamp, data FROM flowstore_event
               WHERE execution_id = c.id AND exec_created = c.created
               UNION ALL SELECT c.seq, %(ev0f)s, %(ev0k)s, %(ev0t)s::timestamptz, %(ev0d)s
               WHERE c.id IS NOT NULL) v)
"""

DELIVER_AND_CLAIM = Query(
    "deliver_and_claim",
    """PostgreSQL: a whole `signal_and_claim` as ONE statement (run in autocommit: one round trip, one
    transaction). DELIVER, and when the delivery lands on a row that it makes ready for the deliverer
    (claimable status, no live claim, a wait row on field `name`) the same UPDATE stamps the claim (holder
    `executor`, expiry `expiry`, a fresh token from the sequence) and the statement NOTIFYs nobody;
    otherwise it NOTIFYs as DELIVER does. Answers DELIVER's (locked, delivered, status), then the claimed
    row as CLAIM_WITH_LEDGER answers one (columns, waits, fields, history), NULLs when it claimed nothing.

    The statement's own writes are invisible to its other parts, so the ledger is the snapshot's record
    with the new field and event added. The claim is taken only if the row is the version of the
    snapshot (`xmin` unchanged while the lock was awaited): every write to an execution's waits, fields or
    history also updates its row, so the snapshot's record is then the whole record. A row changed by a
    write that committed meanwhile is delivered to without a claim (the pollers are woken as by DELIVER).""",
    "",
    postgresql=f"""
    WITH locked AS (
        SELECT id, last_seq, status_kind, claim_expiry, xmin AS version, created FROM flowstore_execution
        WHERE id = %(id)s AND status_kind NOT IN {TERMINAL} FOR UPDATE
    ),
    {_DELIVERY_WRITES}
    take AS (
        SELECT locked.id FROM locked JOIN go ON go.id = locked.id
        WHERE locked.status_kind IN {CLAIMABLE}
          AND (locked.claim_expiry IS NULL OR locked.claim_expiry <= %(now)s)
          AND locked.version = (SELECT xmin FROM flowstore_execution WHERE id = %(id)s)
          AND EXISTS (SELECT 1 FROM flowstore_wait w
                      WHERE w.execution_id = locked.id AND w.field_name = %(name)s)
    ),
    stamped AS (
        UPDATE flowstore_execution e SET updated = %(now)s, last_seq = e.last_seq + 1,
            executor = CASE WHEN take.id IS NULL THEN e.executor ELSE %(executor)s END,
            claim_expiry = CASE WHEN take.id IS NULL THEN e.claim_expiry ELSE %(expiry)s END,
            claim_token = CASE WHEN take.id IS NULL THEN e.claim_token ELSE {_NEXTVAL} END
        FROM go LEFT JOIN take ON take.id = go.id WHERE e.id = go.id
        RETURNING {EXEC_COLS}, e.last_seq AS seq, take.id IS NOT NULL AS claimed
    ),
    c AS (SELECT * FROM stamped WHERE claimed)
    SELECT EXISTS (SELECT 1 FROM locked), EXISTS (SELECT 1 FROM stamped),
        (SELECT status FROM flowstore_execution WHERE id = %(id)s),
        CASE WHEN EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM take)
             THEN pg_notify('{WAKE_CHANNEL}', %(origin)s) END,
        {", ".join(f"c.{col}" for col in EXECUTION_COLUMNS)},
        {_LEDGER_OF_CLAIMED}
    FROM (SELECT 1) AS one LEFT JOIN c ON TRUE
    """,
)
