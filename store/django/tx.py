"""One transaction of the Django store: its cursor (`Tx`), and a row read and locked in it for a decision
made in Python (`Locked`). Both databases run their transactional writes through these; PostgreSQL's
one-statement writes (`store/django/postgres.py`) need neither."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from flowdeck.store import claim_order, deferral, spi
from flowdeck.store.django import queries, rows

__all__ = ["Locked", "Tx"]


class Tx:
    """One transaction's cursor: runs the named queries, adapting times for the backend."""

    def __init__(self, cursor: Any, connection: Any, *, read_only: bool = False) -> None:
        self.cursor = cursor
        self.connection = connection
        self.vendor: str = connection.vendor
        # on a streaming replica: reads only, and no read's housekeeping write (status_tally.compact)
        self.read_only = read_only

    def adapt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ops = self.connection.ops
        return {
            k: ops.adapt_datetimefield_value(v) if isinstance(v, datetime) else v for k, v in params.items()
        }

    def execute(self, query: queries.Query, params: Mapping[str, Any] | None = None, **fmt: str) -> None:
        sql = query.text(self.vendor)
        if fmt:
            sql = sql.format(**fmt)
        self.cursor.execute(sql, self.adapt(params or {}))

    def one(self, query: queries.Query, params: Mapping[str, Any] | None = None, **fmt: str) -> Any:
        self.execute(query, params, **fmt)
        return self.cursor.fetchone()

    def all(self, query: queries.Query, params: Mapping[str, Any] | None = None, **fmt: str) -> list[Any]:
        self.execute(query, params, **fmt)
        return self.cursor.fetchall()

    def insert_events(self, execution_id: str, first_seq: int, events: Sequence[spi.Event]) -> None:
        if not events:
            return
        params: dict[str, Any] = {}
        cast = "::timestamptz" if self.vendor == "postgresql" else ""
        values = queries.event_rows(execution_id, first_seq, rows.event_values(events), params, cast)
        self.execute(queries.INSERT_EVENTS, params, rows=values)

    def create_execution(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
        now: datetime,
    ) -> bool:
        """CREATE_EXECUTION with its seed fields and its Created event as seq 1, waking nobody. False when
        the id exists: then nothing was written but, on SQLite, a reserved token (roll back to drop it)."""
        params = {"id": execution_id, "flow_id": flow_id, "hash": hash, "now": now}
        params.update(rows.status_columns(status), priority=claim_order.priority_of(event.data))
        params.update(rows.limits_columns(event.data))
        if self.vendor == "sqlite":  # PostgreSQL's statement takes the serial from its sequence
            (params["serial"],) = self.one(queries.TAKE_TOKENS, {"n": 1})
        if self.one(queries.CREATE_EXECUTION, params) is None:
            return False
        for path, wake in deferral.initial_waits(event.data).items():
            self.execute(queries.INSERT_WAIT_IF_ABSENT, {"id": execution_id, **rows.wait_columns(path, wake)})
        self.insert_seeds(execution_id, fields)
        self.insert_events(execution_id, 1, [event])
        return True

    def insert_seeds(self, execution_id: str, fields: Mapping[str, spi.FieldData] | None) -> None:
        for name, data in (fields or {}).items():
            self.execute(
                queries.INSERT_SEED_FIELD,
                {"id": execution_id, "name": name, "value": data.value, "tag": data.tag},
            )

    def rollback(self) -> None:
        """Undo everything this transaction did (a refused write changes nothing)."""
        transaction.set_rollback(True, using=self.connection.alias)


@dataclass
class Locked:
    """A row read (and, on PostgreSQL, locked) for a decision made in Python."""

    execution_id: str
    flow_id: str
    hash: str
    status: spi.Status
    executor: str | None
    claim_expiry: datetime | None
    claim_token: int | None
    cancel_requested: bool
    cancel_reason: str
    last_seq: int

    @classmethod
    def read(cls, tx: Tx, execution_id: str) -> Locked | None:
        found = tx.one(queries.LOCK_EXECUTION, {"id": execution_id})
        if found is None:
            return None
        state = rows.execution_state(found, {})
        return cls(
            execution_id=state.execution_id,
            flow_id=state.flow_id,
            hash=state.hash,
            status=state.status,
            executor=state.executor,
            claim_expiry=state.claim_expiry,
            claim_token=state.claim_token,
            cancel_requested=state.cancel_requested,
            cancel_reason=state.cancel_reason,
            last_seq=int(found[-1]),
        )

    def write(self, tx: Tx, now: datetime, events: Sequence[spi.Event], **changes: Any) -> None:
        """Write the row with `changes` and append `events` after its newest."""
        status = changes.pop("status", self.status)
        values: dict[str, Any] = {
            "id": self.execution_id,
            "hash": self.hash,
            "cancel_requested": self.cancel_requested,
            "cancel_reason": self.cancel_reason,
            "executor": self.executor,
            "claim_expiry": self.claim_expiry,
            "claim_token": self.claim_token,
            "last_seq": self.last_seq + len(events),
            "now": now,
        }
        values.update(changes)
        values.update(rows.status_columns(status))
        tx.execute(queries.UPDATE_EXECUTION, values)
        tx.insert_events(self.execution_id, self.last_seq + 1, events)
