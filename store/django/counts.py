"""The Django store's counts for an operations console: executions per status and per version, failure
kinds, live claims per executor, and the executors that claimed lately. Work functions for
`DjangoStore._run`, on one transaction's `Tx` (the ORM on its connection's alias)."""

from __future__ import annotations

import functools
import json
import operator
from collections import defaultdict
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from flowdeck.store import counts
from flowdeck.store.django import models, status_tally

if TYPE_CHECKING:
    from flowdeck.store.django.store import Tx

__all__ = [
    "activity",
    "backlog",
    "by_code",
    "by_status",
    "by_version",
    "claims_by_executor",
    "failure_kinds",
    "recent_claimers",
    "waiting_longest",
]


# The overview's counts are `count(*)`, not `count(id)`: the id is in no index they read, and counting it
# would send an index-only scan back to the table for every row (tests/store/test_overview_plan.py).


def code_counts(db: str, word: str, column: str) -> QuerySet[models.Execution, tuple[Any, ...]]:
    """Per workflow, the `word` rows (failed/stopped) per `column` (failure_kind/stop_code), from their
    partial index (fs_exec_failed_flow_kind / fs_exec_stopped_flow_code)."""
    return (
        models.Execution.objects.using(db)
        .filter(status_kind=word)
        .values("flow_id", column)
        .annotate(n=Count("*"))
        .values_list("flow_id", column, "n")
    )


def by_status(tx: Tx, workflow_id: str | None) -> list[counts.StatusCount]:
    found = status_tally.sums(tx, workflow_id)
    tallies = [counts.StatusCount(flow_id, kind, n) for flow_id, kind, n in found if n]
    return sorted(tallies, key=lambda c: (c.workflow_id, c.status))


def by_version(tx: Tx, workflow_id: str) -> list[counts.VersionCount]:
    db = tx.connection.alias
    seen: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # hash -> [unended, total]
    found = (
        models.Execution.objects.using(db)
        .filter(flow_id=workflow_id)
        .values("hash", "status_kind")
        .annotate(n=Count("*"))
    )
    for row in found:
        tally = seen[row["hash"]]
        tally[1] += row["n"]
        if row["status_kind"] not in models.TERMINAL_KINDS:
            tally[0] += row["n"]
    registered: dict[str, Any] = dict(
        models.WorkflowVersion.objects.using(db)
        .filter(workflow_id=workflow_id)
        .values_list("hash", "registered")
    )
    return [
        counts.VersionCount(digest, registered.get(digest), *seen.get(digest, (0, 0)))
        for digest in sorted({*registered, *seen})
    ]


# PostgreSQL: the distinct kinds by skipping through fs_exec_failkind_created, one probe per kind (a
# DISTINCT reads every failure's entry: 48 ms at W11's 100,000 failures, for the list's every page).
_KINDS_SKIPPING = """
WITH RECURSIVE kinds(kind) AS (
    (SELECT failure_kind FROM flowstore_execution WHERE failure_kind IS NOT NULL
     ORDER BY failure_kind LIMIT 1)
    UNION ALL
    SELECT (SELECT failure_kind FROM flowstore_execution WHERE failure_kind IS NOT NULL
            AND failure_kind > kinds.kind ORDER BY failure_kind LIMIT 1)
    FROM kinds WHERE kinds.kind IS NOT NULL
)
SELECT kind FROM kinds WHERE kind IS NOT NULL
"""


def failure_kinds(tx: Tx) -> list[str]:
    if tx.vendor == "postgresql":
        tx.cursor.execute(_KINDS_SKIPPING)
        return sorted(row[0] for row in tx.cursor.fetchall())
    found = models.Execution.objects.using(tx.connection.alias).filter(failure_kind__isnull=False)
    return sorted(set(found.values_list("failure_kind", flat=True)))


def claims_by_executor(tx: Tx, now: datetime) -> list[counts.ExecutorClaims]:
    held: dict[str, list[str]] = defaultdict(list)
    found = (
        models.Execution.objects.using(tx.connection.alias)
        .filter(executor__isnull=False, claim_expiry__gt=now)
        .order_by("executor", "id")
        .values_list("executor", "id")
    )
    for executor, eid in found:
        held[executor].append(eid)
    return [counts.ExecutorClaims(executor, tuple(ids)) for executor, ids in held.items()]


def recent_claimers(tx: Tx, since: datetime, scan: int) -> list[counts.RecentClaimer]:
    seen: dict[str, list[Any]] = {}  # executor -> [claims, latest]
    found = (
        models.Event.objects.using(tx.connection.alias)
        .filter(kind="ExecutionClaimed", timestamp__gte=since)
        .order_by("-id")
        .values_list("data", "timestamp")[:scan]
    )
    for data, at in found:
        try:
            executor = str(json.loads(data).get("executor_id") or "")
        except ValueError:
            continue
        if executor:
            seen.setdefault(executor, [0, at])[0] += 1
    ordered = sorted(seen.items(), key=lambda item: item[1][1], reverse=True)
    return [counts.RecentClaimer(executor, n, at) for executor, (n, at) in ordered]


def by_code(tx: Tx) -> list[counts.CodeCount]:
    found: list[counts.CodeCount] = []
    # a failure with no kind has a null failure_kind: it is counted as the workflow's failures
    for word, column in (("failed", "failure_kind"), ("stopped", "stop_code")):
        rows = code_counts(tx.connection.alias, word, column)
        found += [counts.CodeCount(wid, word, code, n) for wid, code, n in rows]
    return sorted(found, key=lambda c: (c.workflow_id, c.status, c.code is not None, c.code or ""))


# The bucket of a timestamp column: whole epoch seconds since `since`, divided by the width (both whole
# seconds, and the rows counted are at or after `since`, so the integer division is the floor on either
# backend). PostgreSQL: date_part's double, not EXTRACT's numeric, whose arithmetic cost the day's 86,000
# rows of W11 half the query (56 -> 26 ms).
_BUCKET = {
    "sqlite": "(CAST(strftime('%%s', {column}) AS INTEGER) - %s) / %s",
    "postgresql": "(FLOOR(DATE_PART('epoch', {column}))::bigint - %s) / %s",
}


def activity(tx: Tx, since: datetime, width: timedelta, now: datetime) -> list[counts.ActivityBucket]:
    n = counts.bucket_count(since, now, width)
    executions = models.Execution.objects.using(tx.connection.alias)
    params = (int(since.timestamp()), int(width.total_seconds()))
    tally = [[0, 0, 0] for _ in range(n)]

    def bucket(column: str) -> RawSQL:
        table = models.Execution._meta.db_table
        return RawSQL(_BUCKET[tx.vendor].format(column=f'"{table}"."{column}"'), params)

    started = (
        executions.filter(created__gte=since)
        .annotate(b=bucket("created"))
        .values("b")
        .annotate(n=Count("*"))
        .values_list("b", "n")
    )
    ended = ended_counts(executions, since, bucket("ended"))
    for b, count in started:
        if 0 <= b < n:
            tally[b][0] += count
    for kind, b, count in ended:
        if 0 <= b < n:
            tally[b][1 if kind == "completed" else 2] += count
    return [counts.ActivityBucket(since + width * i, *tally[i]) for i in range(n)]


def ended_counts(
    executions: QuerySet[models.Execution], since: datetime, bucket: RawSQL
) -> QuerySet[models.Execution, tuple[Any, ...]]:
    """Completions and failures since `since` per bucket of their ending (`ended`, set once by the
    database as an execution ends: see models.Execution.ended and migration 0009)."""
    return (
        executions.filter(status_kind__in=(models.COMPLETED, models.FAILED), ended__gte=since)
        .annotate(b=bucket)
        .values("status_kind", "b")
        .annotate(n=Count("*"))
        .values_list("status_kind", "b", "n")
    )


def waiting_longest(tx: Tx, limit: int, retrying: bool) -> counts.WaitingPage:
    db = tx.connection.alias
    waits = models.Wait.objects.using(db)
    if retrying:
        waits = waits.filter(models.RETRYING)
    # wait rows exist only on unended rows (an ending retires them): the total needs no join
    total = waits.values("execution_id").distinct().count()
    # oldest first through fs_exec_active_created (walked backwards), each checked for a wait row
    page = list(
        models.Execution.objects.using(db)
        .filter(~Q(status_kind__in=models.TERMINAL_KINDS), Exists(waits.filter(execution_id=OuterRef("id"))))
        .order_by("created", "serial")
        .values_list("id", "flow_id", "created", "updated")[: max(0, limit)]
    )
    rows: dict[str, list[Any]] = {eid: [[], None] for eid, *_ in page}  # id -> [paths, earliest at]
    found = (
        models.Wait.objects.using(db)
        .filter(execution_id__in=list(rows))
        .values_list("execution_id", "path", "at")
    )
    for eid, path, at in found:
        rows[eid][0].append(path)
        if at is not None and (rows[eid][1] is None or at < rows[eid][1]):
            rows[eid][1] = at
    items = [
        counts.Waiting(eid, wid, created, updated, tuple(sorted(rows[eid][0])), rows[eid][1])
        for eid, wid, created, updated in page
    ]
    return counts.WaitingPage(total, items)


def backlog(tx: Tx, served: frozenset[tuple[str, str]], cap: int, now: datetime) -> counts.Backlog:
    """I8 (`queries._READY_WHERE`) through the ORM, oldest created first up to `cap` + 1 rows (the claim's
    own order and index, fs_exec_kind_created), then the due sleeps of the rows counted."""
    if not served:
        return counts.Backlog(0, False, None)
    db = tx.connection.alias
    fields = models.Field.objects.using(db).filter(
        execution_id=OuterRef(OuterRef("id")), name=OuterRef("field_name")
    )
    waits = models.Wait.objects.using(db).filter(execution_id=OuterRef("id"))
    ready = (
        models.Execution.objects.using(db)
        .filter(status_kind__in=models.CLAIMABLE_KINDS)
        .filter(functools.reduce(operator.or_, (Q(flow_id=f, hash=h) for f, h in sorted(served))))
        .filter(Q(claim_expiry__isnull=True) | Q(claim_expiry__lte=now))
        .filter(
            Q(cancel_requested=True)
            | Q(claim_token__isnull=False)
            | ~Exists(waits)
            | Exists(waits.filter(Q(at__lte=now) | Exists(fields)))
        )
        .order_by("created", "serial")
        .values_list("id", "updated", "claim_expiry")[: max(cap, 0) + 1]
    )
    rows = list(ready)
    counted = rows[: max(cap, 0)]
    since = {eid: max(updated, expiry) if expiry else updated for eid, updated, expiry in counted}
    due = (
        models.Wait.objects.using(db)
        .filter(execution_id__in=list(since), kind=models.Wait.AT, at__lte=now)
        .values_list("execution_id", "at")
    )
    for eid, at in due:
        since[eid] = max(since[eid], at)
    return counts.Backlog(len(counted), len(rows) > len(counted), min(since.values(), default=None))
