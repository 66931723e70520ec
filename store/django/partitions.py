"""The history's time partitions on PostgreSQL (migration 0018): the days prepared ahead, and retention by
whole partitions. Its SQL is `partition_queries`; the choices are explained in docs/operating.md
("Retention by partitions").

A partition holds the events of the executions CREATED on its UTC day. Retention takes one whole only when
every execution created that day is one the purge takes (ended, before the cutoff, of its kinds and
workflow): first the executions' rows go in batches with their fields, progress marks and waits (as a row
purge deletes them, events apart), then, once none is left, the partition is dropped in one statement. A
day holding an execution that must stay (still running, waiting or stopped; ended too recently; of a kind
the policy keeps) is kept whole, and its purgeable executions go by the batched row delete, events and all:
an execution is never split, and no event outlives its execution but for the moment between a partition's
last batch and its drop (the same transaction when they meet in one call).

Days are prepared ahead by the workers' maintenance (`prepare`, `console.runtime.history_chore`), never on
the hot path; a day not prepared in time lands in the DEFAULT partition, purged by rows.
"""

from __future__ import annotations

import logging
import re
from collections.abc import MutableMapping
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, transaction

from flowdeck.store import retention
from flowdeck.store.django import partition_queries as sql
from flowdeck.store.django import purge_queries, queries

if TYPE_CHECKING:
    from flowdeck.store.django.tx import Tx

__all__ = ["AHEAD", "bounds", "days", "is_partitioned", "name_of", "prepare", "purge_whole"]

logger = logging.getLogger(__name__)

AHEAD = 7  # days prepared after today
LOCK_MS = 200  # how long a partition's DDL waits for its lock (see partition_queries.LOCK_TIMEOUT)
_NAME = re.compile(r"^flowstore_event_p(\d{8})$")

# What a store remembers of the days found droppable: (name, kinds, workflow) -> the cutoff it held at.
# Monotone: an ended execution never runs again (I5) and no execution can be created on a past day, so a day
# droppable at one cutoff is droppable at every later one.
Known = MutableMapping[tuple[str, tuple[str, ...], str | None], datetime]


def name_of(day: date) -> str:
    return f"flowstore_event_p{day:%Y%m%d}"


def bounds(day: date) -> tuple[datetime, datetime]:
    """A day's partition bounds, [lo, hi) in UTC."""
    lo = datetime.combine(day, time(), tzinfo=UTC)
    return lo, lo + timedelta(days=1)


def is_partitioned(tx: Tx) -> bool:
    return tx.vendor == "postgresql" and bool(tx.one(sql.IS_PARTITIONED)[0])


def days(tx: Tx) -> list[date]:
    """The days that have a partition, oldest first."""
    found = []
    for (name,) in tx.all(sql.LIST):
        matched = _NAME.match(name)
        if matched:
            found.append(datetime.strptime(matched.group(1), "%Y%m%d").date())
    return sorted(found)


def prepare(tx: Tx, first: date, last: date) -> list[date]:
    """A partition for every day of [first, last] that has none; answers the days made. A day whose rows
    already sit in the DEFAULT partition is left to it. Gives up (for the next round) on a lock not had
    within LOCK_MS."""
    have = set(days(tx))
    made = []
    day = first
    while day <= last:
        if day not in have and _attach(tx, day):
            made.append(day)
        day += timedelta(days=1)
    return made


def _attach(tx: Tx, day: date) -> bool:
    lo, hi = bounds(day)
    if tx.one(sql.DEFAULT_HOLDS, {"lo": lo, "hi": hi})[0]:
        return False
    try:
        with transaction.atomic(using=tx.connection.alias):
            tx.execute(sql.LOCK_TIMEOUT, ms=str(LOCK_MS))
            tx.execute(sql.STANDALONE, name=name_of(day))
            tx.execute(sql.ATTACH, name=name_of(day), lo=lo.isoformat(), hi=hi.isoformat())
    except DatabaseError as error:
        logger.warning(
            "history partition %s not made: %s", name_of(day), error, extra={"action": "partition"}
        )
        return False
    return True


def _droppable(tx: Tx, day: date, what: retention.Purge, known: Known) -> bool:
    key = (name_of(day), what.statuses, what.workflow_id)
    if key in known and known[key] <= what.ended_before:
        return True
    lo, hi = bounds(day)
    params: dict[str, Any] = {"lo": lo, "hi": hi, "before": what.ended_before}
    kinds = queries.in_list("k", what.statuses, params)
    flow = ""
    if what.workflow_id is not None:
        params["flow"], flow = what.workflow_id, " AND flow_id = %(flow)s"
    if tx.one(sql.HELD, params, kinds=kinds, flow=flow)[0]:
        return False
    known[key] = what.ended_before
    return True


def _purge_rows(tx: Tx, lo: datetime, hi: datetime, limit: int) -> int:
    """A batch of a droppable day's executions with their ledger rows, events apart (they go with the day)."""
    found = tx.all(sql.RANGE_BATCH, {"lo": lo, "hi": hi, "limit": limit})
    if not found:
        return 0
    params: dict[str, Any] = {}
    listed = queries.in_list("p", [row[0] for row in found], params)
    for query in purge_queries.PURGE_LEDGER:
        if query.name != "purge_event":
            tx.execute(query, params, ids=listed)
    tx.execute(purge_queries.PURGE_EXECUTIONS, params, ids=listed)
    return int(tx.cursor.rowcount)


def _drop(tx: Tx, day: date) -> bool:
    try:
        with transaction.atomic(using=tx.connection.alias):
            tx.execute(sql.LOCK_TIMEOUT, ms=str(LOCK_MS))
            tx.execute(sql.DROP, name=name_of(day))
    except DatabaseError as error:  # a lock not had in time: the next call tries again
        logger.info(
            "history partition %s not dropped yet: %s", name_of(day), error, extra={"action": "partition"}
        )
        return False
    logger.info("history partition %s dropped", name_of(day), extra={"action": "retention"})
    return True


def purge_whole(tx: Tx, what: retention.Purge, limit: int, known: Known) -> int:
    """Up to `limit` executions purged from droppable days, oldest day first, each day dropped once its
    executions are gone; answers how many went. Stops at the first day not wholly before the cutoff."""
    purged = 0
    for day in days(tx):
        lo, hi = bounds(day)
        if hi > what.ended_before:
            break
        if not _droppable(tx, day, what, known):
            continue
        purged += _purge_rows(tx, lo, hi, limit - purged)
        if purged >= limit:
            break
        if not tx.one(sql.RANGE_EMPTY, {"lo": lo, "hi": hi})[0] or not _drop(tx, day):
            break  # rows another purge holds, or a lock not had: the next call goes on
        known.pop((name_of(day), what.statuses, what.workflow_id), None)
    return purged
