"""Between SPI values and table rows: statuses, wakes, events and execution rows, both directions."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from flowdeck.store import concurrency, rate_limits, spi
from flowdeck.store.django import models


def to_datetime(value: Any) -> datetime | None:
    """A time read back from either backend (SQLite may answer text or a naive UTC datetime), in UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError(f"not a time: {value!r}")
        value = parsed
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def status_columns(status: spi.Status) -> dict[str, Any]:
    """The status as JSON text beside the indexed columns `list_executions` filters on."""
    data = spi.status_to_json(status)
    return {
        "status": json.dumps(data, separators=(",", ":"), sort_keys=True),
        "status_kind": data["type"],
        "failure_kind": status.kind if isinstance(status, spi.Failed) else None,
        "stop_code": status.code if isinstance(status, spi.Stopped) else None,
    }


def status_of(text: str) -> spi.Status:
    return spi.status_from_json(json.loads(text))


def wait_columns(path: str, wake: spi.Wake) -> dict[str, Any]:
    """A wait row's columns, and whether it replaces a row at its path (`replaces`: a rate limit's row,
    where a new reservation supersedes one a start spent; any other row is put-if-absent)."""
    row = {"path": path, "replaces": rate_limits.rate_row_matches(path)}
    if isinstance(wake, spi.WakeAt):
        return {**row, "kind": models.Wait.AT, "at": wake.at, "field_name": None}
    return {**row, "kind": models.Wait.ON_FIELD, "at": None, "field_name": wake.name}


def wake_of(kind: str, at: Any, field_name: str | None) -> spi.Wake:
    if kind == models.Wait.AT:
        moment = to_datetime(at)
        assert moment is not None
        return spi.WakeAt(moment)
    return spi.WakeOnField(field_name or "")


def event_values(events: Iterable[spi.Event]) -> list[tuple[str, str, datetime, str]]:
    """`(flow_id, kind, timestamp, data JSON)` for INSERT_EVENTS."""
    return [(e.flow_id, e.kind.value, e.timestamp, e.data_json()) for e in events]


def event_of(flow_id: str, execution_id: str, seq: int, kind: str, timestamp: Any, data: str) -> spi.Event:
    moment = to_datetime(timestamp)
    assert moment is not None
    return spi.Event(spi.EventKind(kind), flow_id, execution_id, moment, json.loads(data), seq)


def execution_state(row: Sequence[Any], waits: Mapping[str, spi.Wake]) -> spi.ExecutionState:
    """Decode a row in `queries.EXECUTION_COLUMNS` order."""
    eid, flow_id, hash_, status, executor, expiry, token, created, updated, cancel, reason = row[:11]
    priority, limit, key, per_key = row[11:15]
    created_at, updated_at = to_datetime(created), to_datetime(updated)
    assert created_at is not None
    assert updated_at is not None
    return spi.ExecutionState(
        execution_id=eid,
        flow_id=flow_id,
        status=status_of(status),
        executor=executor,
        claim_expiry=to_datetime(expiry),
        hash=hash_,
        created=created_at,
        updated=updated_at,
        waits=dict(waits),
        cancel_requested=bool(cancel),
        claim_token=int(token) if token is not None else None,
        cancel_reason=reason or "",
        priority=int(priority),
        concurrency=limits_of_row(limit, key, per_key),
    )


def limits_of_row(limit: Any, key: Any, per_key: Any) -> concurrency.Limits | None:
    """The concurrency columns as the row's `Limits` (None: an unlimited execution)."""
    if not limit and not per_key:
        return None
    return concurrency.Limits(limit=int(limit or 0), key=key, per_key=int(per_key or 0))


def limits_columns(data: Mapping[str, Any]) -> dict[str, Any]:
    """A Created event's concurrency limits as the row's columns (`store.concurrency`)."""
    limits = concurrency.limits_of(data)
    if limits is None:
        return {"concurrency_limit": 0, "concurrency_key": None, "concurrency_per_key": 0}
    return {
        "concurrency_limit": limits.limit,
        "concurrency_key": limits.key if limits.per_key else None,
        "concurrency_per_key": limits.per_key if limits.key is not None else 0,
    }
