"""The raw SQL of the history's time partitions (PostgreSQL only; `store.django.partitions` runs it, migration
0018 builds the partitioned table with it). Apart from `queries` and written the same way: each statement
named and described.

`flowstore_event` is partitioned by RANGE on `exec_created`, the creation instant of the event's execution
(not the event's own time): every event of one execution lands in one partition, so a partition can go as a
whole once every execution created in its window has ended and aged. One partition per UTC day, named
`flowstore_event_pYYYYMMDD`, and a DEFAULT partition that catches a row no day partition takes (a day not
prepared ahead, or an old row the migration carried over): the hot path never fails for want of one.

The DDL cannot take bound parameters: its names and bounds are formatted from dates this module computes,
never from input.
"""

from __future__ import annotations

from flowdeck.store.django.queries import Query

__all__ = [
    "ATTACH",
    "COPY_EVENTS",
    "CREATE_PARTITIONED",
    "DEFAULT_HOLDS",
    "DROP",
    "HELD",
    "IS_PARTITIONED",
    "LIST",
    "LOCK_TIMEOUT",
    "PARENT",
    "RANGE_BATCH",
    "RANGE_EMPTY",
    "STANDALONE",
]

PARENT = "flowstore_event"
DEFAULT = "flowstore_event_default"

IS_PARTITIONED = Query(
    "history_partitioned",
    "Whether the history is a partitioned table (migration 0018 ran on this database).",
    "",
    postgresql=f"SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = '{PARENT}'::regclass)",
)

LIST = Query(
    "history_partitions",
    "The names of the history's partitions (the day ones are named after their day).",
    "",
    postgresql=f"""
    SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = '{PARENT}'::regclass ORDER BY c.relname
    """,
)

LOCK_TIMEOUT = Query(
    "history_lock_timeout",
    """How long a partition's DDL waits for its lock before giving up (this transaction only). A DROP queued
    behind a long transaction would queue every event insert behind itself: better to try again later.""",
    "",
    postgresql="SET LOCAL lock_timeout = '{ms}ms'",
)

STANDALONE = Query(
    "history_standalone",
    "A day's table shaped like the history (columns and defaults), before it is attached.",
    "",
    postgresql=f"CREATE TABLE IF NOT EXISTS {{name}} (LIKE {PARENT} INCLUDING DEFAULTS)",
)

ATTACH = Query(
    "history_attach",
    """A day's table attached as the partition of [lo, hi). ATTACH takes a SHARE UPDATE EXCLUSIVE lock on the
    history (inserts and reads go on), where CREATE TABLE ... PARTITION OF would take an exclusive one; the
    keys' indexes are built on the empty table as it is attached.""",
    "",
    postgresql=f"ALTER TABLE {PARENT} ATTACH PARTITION {{name}} FOR VALUES FROM ('{{lo}}') TO ('{{hi}}')",
)

DEFAULT_HOLDS = Query(
    "history_default_holds",
    """Whether the DEFAULT partition holds rows of [lo, hi): then that day gets no partition of its own (the
    attach would fail), and its rows go by the batched delete.""",
    "",
    postgresql=f"""
    SELECT EXISTS (SELECT 1 FROM {DEFAULT} WHERE exec_created >= %(lo)s AND exec_created < %(hi)s)
    """,
)

# An execution a purge of `{kinds}` ended before `before` (of one workflow with `{flow}`) would not take.
_KEPT = "NOT (status_kind IN {kinds} AND updated < %(before)s{flow})"

HELD = Query(
    "history_held",
    """Whether an execution created in [lo, hi) must stay: unended (live, waiting, stopped), ended after
    `before`, or of a kind or workflow this purge leaves. Such a partition is kept whole.""",
    "",
    postgresql=f"""
    SELECT EXISTS (SELECT 1 FROM flowstore_execution
                   WHERE created >= %(lo)s AND created < %(hi)s AND {_KEPT})
    """,
)

RANGE_BATCH = Query(
    "history_range_batch",
    """The ids of at most `limit` executions created in [lo, hi), oldest first, locked (skipping rows another
    transaction holds): a droppable partition's executions, whose rows go before its history does.""",
    "",
    postgresql="""
    SELECT id FROM flowstore_execution WHERE created >= %(lo)s AND created < %(hi)s
    ORDER BY created, serial LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    """,
)

RANGE_EMPTY = Query(
    "history_range_empty",
    "Whether no execution created in [lo, hi) is left: its partition's history belongs to nobody.",
    "",
    postgresql="""
    SELECT NOT EXISTS (SELECT 1 FROM flowstore_execution WHERE created >= %(lo)s AND created < %(hi)s)
    """,
)

DROP = Query(
    "history_drop",
    "A partition whose executions are all gone, dropped with its rows (an exclusive lock, to the commit).",
    "",
    postgresql="DROP TABLE IF EXISTS {name}",
)

# ------------------------------------------------------------------------------- migration 0018

# The claim's read of a claimed execution's history (queries.CLAIM_WITH_LEDGER), in PL/pgSQL so that it is
# not inlined: its query is planned apart, with the partition key known, on that one partition (and its plan
# kept for the session), where a subquery of the claim would be planned over every day partition on every
# poll. STABLE: it reads with the claim statement's own snapshot, as the subquery did.
HISTORY_FUNCTION = f"""
    CREATE FUNCTION flowstore_claimed_history(p_id varchar, p_created timestamptz) RETURNS json
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
        RETURN (SELECT json_agg(json_build_array(v.seq, v.flow_id, v.kind, v.timestamp, v.data)
                                ORDER BY v.seq)
                FROM {PARENT} v WHERE v.execution_id = p_id AND v.exec_created = p_created);
    END
    $$;
"""

CREATE_PARTITIONED = Query(
    "history_create_partitioned",
    """Migration 0018: the unpartitioned history renamed aside, and the partitioned one in its place with the
    same columns plus `exec_created`; the partition key joins the primary key and the (execution, seq)
    constraint (PostgreSQL requires it; every event of an execution carries the same value, so the
    constraint still says one event per seq). PostgreSQL 15 has no identity column on a partitioned table:
    `id` takes a sequence of its own, owned by the column, started after the old table's last id.""",
    "",
    postgresql=f"""
    ALTER TABLE {PARENT} RENAME TO flowstore_event_unpartitioned;
    ALTER TABLE flowstore_event_unpartitioned
        RENAME CONSTRAINT fs_event_unique_seq TO fs_event_unique_seq_old;
    ALTER TABLE flowstore_event_unpartitioned
        RENAME CONSTRAINT flowstore_event_pkey TO flowstore_event_pkey_old;
    CREATE SEQUENCE flowstore_event_ids;
    SELECT setval('flowstore_event_ids', COALESCE((SELECT MAX(id) FROM flowstore_event_unpartitioned), 0) + 1,
                  false);
    CREATE TABLE {PARENT} (
        id bigint NOT NULL DEFAULT nextval('flowstore_event_ids'),
        seq integer NOT NULL,
        flow_id varchar(255) NOT NULL,
        kind varchar(32) NOT NULL,
        timestamp timestamptz NOT NULL,
        data text NOT NULL,
        execution_id varchar(255) NOT NULL,
        exec_created timestamptz NOT NULL,
        CONSTRAINT flowstore_event_pkey PRIMARY KEY (id, exec_created),
        CONSTRAINT fs_event_unique_seq UNIQUE (execution_id, seq, exec_created)
    ) PARTITION BY RANGE (exec_created);
    ALTER SEQUENCE flowstore_event_ids OWNED BY {PARENT}.id;
    CREATE TABLE {DEFAULT} PARTITION OF {PARENT} DEFAULT;
    {HISTORY_FUNCTION}
    """,
)

OLDEST = Query(
    "history_oldest",
    "Migration 0018: the oldest execution's creation (the first day a partition is made for), if any.",
    "",
    postgresql="SELECT MIN(created) FROM flowstore_execution",
)

COPY_EVENTS = Query(
    "history_copy",
    """Migration 0018: every event carried over with its execution's creation as its partition key (an event
    whose execution is gone, possible since 0011 dropped the constraint, keeps its own time), in id order;
    then the old table dropped.""",
    "",
    postgresql=f"""
    INSERT INTO {PARENT} (id, seq, flow_id, kind, timestamp, data, execution_id, exec_created)
    SELECT v.id, v.seq, v.flow_id, v.kind, v.timestamp, v.data, v.execution_id,
        COALESCE(e.created, v.timestamp)
    FROM flowstore_event_unpartitioned v LEFT JOIN flowstore_execution e ON e.id = v.execution_id
    ORDER BY v.id;
    DROP TABLE flowstore_event_unpartitioned;
    ALTER SEQUENCE flowstore_event_ids RENAME TO flowstore_event_id_seq;
    """,
)

UNPARTITION = Query(
    "history_unpartition",
    "Migration 0018 reversed: the history as one plain table again (identity id, the old constraints).",
    "",
    postgresql=f"""
    ALTER TABLE {PARENT} RENAME TO flowstore_event_partitioned;
    ALTER TABLE flowstore_event_partitioned RENAME CONSTRAINT fs_event_unique_seq TO fs_event_unique_seq_p;
    ALTER TABLE flowstore_event_partitioned RENAME CONSTRAINT flowstore_event_pkey TO flowstore_event_pkey_p;
    CREATE TABLE {PARENT} (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        seq integer NOT NULL,
        flow_id varchar(255) NOT NULL,
        kind varchar(32) NOT NULL,
        timestamp timestamptz NOT NULL,
        data text NOT NULL,
        execution_id varchar(255) NOT NULL,
        CONSTRAINT fs_event_unique_seq UNIQUE (execution_id, seq)
    );
    INSERT INTO {PARENT} (id, seq, flow_id, kind, timestamp, data, execution_id)
    SELECT id, seq, flow_id, kind, timestamp, data, execution_id FROM flowstore_event_partitioned ORDER BY id;
    SELECT setval(pg_get_serial_sequence('{PARENT}', 'id'), COALESCE((SELECT MAX(id) FROM {PARENT}), 0) + 1,
                  false);
    DROP TABLE flowstore_event_partitioned;
    DROP FUNCTION flowstore_claimed_history(varchar, timestamptz);
    """,
)
