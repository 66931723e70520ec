"""The raw SQL of the history's time partitions (PostgreSQL only; `store.django.partitions` runs it). Apart
from `queries` and written the same way: each statement named and described. Migration 0018, which built the
partitioned table, keeps its own frozen copy of the SQL it ran (a migration imports no product module).

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
