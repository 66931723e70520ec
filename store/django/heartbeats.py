"""The Django store's executor heartbeats: one row per executor (`flowstore_heartbeat`), upserted at each
beat and listed while fresh. Work functions for `DjangoStore._run`, on one transaction's `Tx`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from flowdeck.store import heartbeats
from flowdeck.store.django import models

if TYPE_CHECKING:
    from flowdeck.store.django.store import Tx

__all__ = ["listed", "record"]


def record(tx: Tx, beat: heartbeats.Heartbeat, now: datetime) -> None:
    values = {
        "host": beat.host,
        "pid": beat.pid,
        "updated": now,
        "workers_alive": beat.workers_alive,
        "workers_configured": beat.workers_configured,
        "poll_failures": beat.poll_failures,
        "last_poll_failure": beat.last_poll_failure,
        "last_poll_failure_at": beat.last_poll_failure_at,
        "store_failures": beat.store_failures,
        "claims_held": json.dumps(sorted(beat.claims_held)),
    }
    beats = models.ExecutorHeartbeat.objects.using(tx.connection.alias)
    if not beats.filter(executor_id=beat.executor_id).update(**values):
        beats.create(executor_id=beat.executor_id, started=beat.started or now, **values)


def listed(tx: Tx, since: datetime) -> list[heartbeats.RecordedHeartbeat]:
    found = (
        models.ExecutorHeartbeat.objects.using(tx.connection.alias)
        .filter(updated__gte=since)
        .order_by("executor_id")
        .values()
    )
    return [
        heartbeats.RecordedHeartbeat(**{**row, "claims_held": tuple(json.loads(row["claims_held"] or "[]"))})
        for row in found
    ]
