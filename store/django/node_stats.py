"""The Django store's reads of each node of a workflow, for its page: the executions at each node now and
each node's recent durations and failures. Work functions for `DjangoStore._run`, on one transaction's
`Tx`; the rows they read go to the one fold of store/node_stats.py, which the memory store uses too.

Both are bounded and index-backed. `nodes_now` reads the newest `scan` unended executions of the workflow
(`fs_exec_flow_kind_created`, one range per unended status kind), their wait rows and their step events
(each by the unique `(execution, …)` index). `node_stats` reads the node events of the workflow's newest
`recent` executions in one statement: the executions from `fs_exec_flow_created`, their events by
`fs_event_unique_seq`, so its cost is `recent` × a history's length, whatever the table holds."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from flowdeck.store import node_stats, spi
from flowdeck.store.django import models, rows

if TYPE_CHECKING:
    from flowdeck.store.django.store import Tx

__all__ = ["node_stats_of", "nodes_now"]

_UNENDED = (models.RUNNING, models.COMPENSATING, models.STOPPED)
_KINDS = [kind.value for kind in node_stats.NODE_EVENTS]
_STEP_KINDS = [
    spi.EventKind.STEP_STARTED.value,
    spi.EventKind.STEP_COMPLETED.value,
    spi.EventKind.STEP_FAILED.value,
]


def _events(tx: Tx, executions: object, kinds: list[str]) -> list[node_stats.NodeEvent]:
    found = (
        models.Event.objects.using(tx.connection.alias)
        .filter(execution_id__in=executions, kind__in=kinds)
        .order_by("execution_id", "seq")
        .values_list("execution_id", "kind", "timestamp", "data")
    )
    events = []
    for eid, kind, at, data in found:
        moment = rows.to_datetime(at)
        assert moment is not None
        events.append(node_stats.node_event(eid, spi.EventKind(kind), json.loads(data), moment))
    return events


def nodes_now(tx: Tx, workflow_id: str, scan: int) -> list[node_stats.NodeCount]:
    db = tx.connection.alias
    unended = list(
        models.Execution.objects.using(db)
        .filter(flow_id=workflow_id, status_kind__in=_UNENDED)
        .order_by("-created", "-serial")
        .values_list("id", "status")[: max(scan, 0)]
    )
    ids = [eid for eid, _ in unended]
    waits: dict[str, dict[str, spi.Wake]] = {eid: {} for eid in ids}
    found = models.Wait.objects.using(db).filter(execution_id__in=ids)
    for eid, path, kind, at, field_name in found.values_list(
        "execution_id", "path", "kind", "at", "field_name"
    ):
        waits[eid][path] = rows.wake_of(kind, at, field_name)
    statuses = [(eid, rows.status_of(status), waits[eid]) for eid, status in unended]
    claimable = [eid for eid, status, _ in statuses if isinstance(status, spi.Running | spi.Compensating)]
    return node_stats.nodes_now(statuses, _events(tx, claimable, _STEP_KINDS))


def node_stats_of(tx: Tx, workflow_id: str, recent: int) -> list[node_stats.NodeStats]:
    newest = (
        models.Execution.objects.using(tx.connection.alias)
        .filter(flow_id=workflow_id)
        .order_by("-created", "-serial")
        .values("id")[: max(recent, 0)]
    )
    return node_stats.node_stats(_events(tx, newest, _KINDS))
