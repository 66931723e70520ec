"""The Django store's counts for an operations console: executions per status and per version, failure
kinds, live claims per executor, and the executors that claimed lately. Work functions for
`DjangoStore._run`, on one transaction's `Tx` (the ORM on its connection's alias)."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import Count

from store import counts
from store.django import models

if TYPE_CHECKING:
    from store.django.store import Tx

__all__ = ["by_status", "by_version", "claims_by_executor", "failure_kinds", "recent_claimers"]


def by_status(tx: Tx, workflow_id: str | None) -> list[counts.StatusCount]:
    executions = models.Execution.objects.using(tx.connection.alias)
    if workflow_id is not None:
        executions = executions.filter(flow_id=workflow_id)
    found = executions.values("flow_id", "status_kind").annotate(n=Count("id"))
    tallies = [counts.StatusCount(r["flow_id"], r["status_kind"], r["n"]) for r in found]
    return sorted(tallies, key=lambda c: (c.workflow_id, c.status))


def by_version(tx: Tx, workflow_id: str) -> list[counts.VersionCount]:
    db = tx.connection.alias
    seen: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # hash -> [unended, total]
    found = (
        models.Execution.objects.using(db)
        .filter(flow_id=workflow_id)
        .values("hash", "status_kind")
        .annotate(n=Count("id"))
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


def failure_kinds(tx: Tx) -> list[str]:
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
