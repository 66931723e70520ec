"""The history in time partitions (issue 32, PostgreSQL only; SQLite keeps its table).

`flowstore_event` becomes a table partitioned by RANGE on `exec_created`, its execution's creation: one
partition per UTC day and a DEFAULT one (store/django/partition_queries.py says why). The rows are carried
over: days from the oldest execution's (at most `BACK` days ago; older rows go to the DEFAULT partition and
leave by the batched delete) to `AHEAD` days from today get a partition, then every event is copied with its
execution's creation, and the old table is dropped. The copy rewrites the history once: on a large database
run it in a maintenance window (docs/operating.md, "Retention by partitions").

The model is unchanged (Django's state has no `exec_created`): the column is the database's, written by the
store's own statements, which supply it on PostgreSQL.

Frozen as of this migration: the SQL below, the partitions' names and bounds and the numbers are copies of
what `store/django/partition_queries.py` and `store/django/partitions.py` ran when 0018 was written, not
imports of them. A migration replays a schema change on databases of any age; had it imported the product,
a later change there (a renamed constant, a new column, another naming of the partitions) would make 0018
build another schema than the one every later migration and the store's statements were written against,
or fail. Change the product's modules freely; change this file never (a new schema change is a new
migration). Only the standard library and Django are imported (tests/test_layers.py checks every migration).
"""

import logging
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import DatabaseError, migrations, transaction

logger = logging.getLogger(__name__)

BACK = 92  # days of existing history given partitions of their own
AHEAD = 7  # days given a partition after today (partitions.AHEAD when written; the workers' chore goes on)
LOCK_MS = 200  # how long a partition's DDL waits for its lock (partitions.LOCK_MS when written)

# The claim's read of a claimed execution's history (queries.CLAIM_WITH_LEDGER), in PL/pgSQL so that it is
# not inlined: its query is planned apart, with the partition key known, on that one partition (and its plan
# kept for the session), where a subquery of the claim would be planned over every day partition on every
# poll. STABLE: it reads with the claim statement's own snapshot, as the subquery did. Its body is stored
# as written (pg_get_functiondef, pg_dump): its whitespace is part of the schema, so it is kept to the byte.
HISTORY_FUNCTION = """
    CREATE FUNCTION flowstore_claimed_history(p_id varchar, p_created timestamptz) RETURNS json
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
        RETURN (SELECT json_agg(json_build_array(v.seq, v.flow_id, v.kind, v.timestamp, v.data)
                                ORDER BY v.seq)
                FROM flowstore_event v WHERE v.execution_id = p_id AND v.exec_created = p_created);
    END
    $$;
"""

# The unpartitioned history renamed aside, and the partitioned one in its place with the same columns plus
# `exec_created`; the partition key joins the primary key and the (execution, seq) constraint (PostgreSQL
# requires it; every event of an execution carries the same value, so the constraint still says one event
# per seq). PostgreSQL 15 has no identity column on a partitioned table: `id` takes a sequence of its own,
# owned by the column, started after the old table's last id. Then the DEFAULT partition and the function.
CREATE_PARTITIONED = (
    """
    ALTER TABLE flowstore_event RENAME TO flowstore_event_unpartitioned;
    ALTER TABLE flowstore_event_unpartitioned
        RENAME CONSTRAINT fs_event_unique_seq TO fs_event_unique_seq_old;
    ALTER TABLE flowstore_event_unpartitioned
        RENAME CONSTRAINT flowstore_event_pkey TO flowstore_event_pkey_old;
    CREATE SEQUENCE flowstore_event_ids;
    SELECT setval('flowstore_event_ids', COALESCE((SELECT MAX(id) FROM flowstore_event_unpartitioned), 0) + 1,
                  false);
    CREATE TABLE flowstore_event (
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
    ALTER SEQUENCE flowstore_event_ids OWNED BY flowstore_event.id;
    CREATE TABLE flowstore_event_default PARTITION OF flowstore_event DEFAULT;
    """
    + HISTORY_FUNCTION
    + "\n    "
)

# The oldest execution's creation (the first day a partition is made for), if any.
OLDEST = "SELECT MIN(created) FROM flowstore_execution"

# A day's partition: a table shaped like the history (columns and defaults), then attached as the partition
# of [lo, hi), each waiting at most LOCK_MS for its lock. The names and bounds are formatted from dates this
# migration computes, never from input (DDL takes no bound parameters).
LOCK_TIMEOUT = f"SET LOCAL lock_timeout = '{LOCK_MS}ms'"
STANDALONE = "CREATE TABLE IF NOT EXISTS {name} (LIKE flowstore_event INCLUDING DEFAULTS)"
ATTACH = "ALTER TABLE flowstore_event ATTACH PARTITION {name} FOR VALUES FROM ('{lo}') TO ('{hi}')"

# Every event carried over with its execution's creation as its partition key (an event whose execution is
# gone, possible since 0011 dropped the constraint, keeps its own time), in id order; then the old table
# dropped and the sequence given the name an identity column's would have.
COPY_EVENTS = """
    INSERT INTO flowstore_event (id, seq, flow_id, kind, timestamp, data, execution_id, exec_created)
    SELECT v.id, v.seq, v.flow_id, v.kind, v.timestamp, v.data, v.execution_id,
        COALESCE(e.created, v.timestamp)
    FROM flowstore_event_unpartitioned v LEFT JOIN flowstore_execution e ON e.id = v.execution_id
    ORDER BY v.id;
    DROP TABLE flowstore_event_unpartitioned;
    ALTER SEQUENCE flowstore_event_ids RENAME TO flowstore_event_id_seq;
    """

# Reversed: the history as one plain table again (identity id, the old constraints), and no function.
UNPARTITION = """
    ALTER TABLE flowstore_event RENAME TO flowstore_event_partitioned;
    ALTER TABLE flowstore_event_partitioned RENAME CONSTRAINT fs_event_unique_seq TO fs_event_unique_seq_p;
    ALTER TABLE flowstore_event_partitioned RENAME CONSTRAINT flowstore_event_pkey TO flowstore_event_pkey_p;
    CREATE TABLE flowstore_event (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        seq integer NOT NULL,
        flow_id varchar(255) NOT NULL,
        kind varchar(32) NOT NULL,
        timestamp timestamptz NOT NULL,
        data text NOT NULL,
        execution_id varchar(255) NOT NULL,
        CONSTRAINT fs_event_unique_seq UNIQUE (execution_id, seq)
    );
    INSERT INTO flowstore_event (id, seq, flow_id, kind, timestamp, data, execution_id)
    SELECT id, seq, flow_id, kind, timestamp, data, execution_id FROM flowstore_event_partitioned ORDER BY id;
    SELECT setval(pg_get_serial_sequence('flowstore_event', 'id'), COALESCE((SELECT MAX(id) FROM flowstore_event), 0) + 1,
                  false);
    DROP TABLE flowstore_event_partitioned;
    DROP FUNCTION flowstore_claimed_history(varchar, timestamptz);
    """


def attach_day(cursor: Any, alias: str, day: date) -> None:
    """The day's partition, [00:00, 24:00) UTC, named `flowstore_event_pYYYYMMDD`. In a savepoint: a day whose
    attach fails (a lock not had in time) is left to the DEFAULT partition and the migration goes on.

    The partitioned table is this migration's own, made in its transaction: it has no day partition yet and
    its DEFAULT partition is empty until COPY_EVENTS, so no day is skipped as present or as held by the
    DEFAULT (the checks `partitions.prepare` makes for the workers' chore)."""
    name = f"flowstore_event_p{day:%Y%m%d}"
    lo = datetime.combine(day, time(), tzinfo=UTC)
    hi = lo + timedelta(days=1)
    try:
        with transaction.atomic(using=alias):
            cursor.execute(LOCK_TIMEOUT)
            cursor.execute(STANDALONE.format(name=name))
            cursor.execute(ATTACH.format(name=name, lo=lo.isoformat(), hi=hi.isoformat()))
    except DatabaseError as error:
        logger.warning("history partition %s not made: %s", name, error, extra={"action": "partition"})


def partition(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(CREATE_PARTITIONED)
        today = datetime.now(UTC).date()
        cursor.execute(OLDEST)
        (oldest,) = cursor.fetchone()
        day = today if oldest is None else max(oldest.astimezone(UTC).date(), today - timedelta(days=BACK))
        while day <= today + timedelta(days=AHEAD):
            attach_day(cursor, connection.alias, day)
            day += timedelta(days=1)
        cursor.execute(COPY_EVENTS)


def unpartition(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(UNPARTITION)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0017_rate_buckets"),
    ]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
