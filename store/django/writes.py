"""The writer seam: how one database takes the Django store's hot operations, chosen once when the store is
built. `PostgresWrites` (store/django/postgres.py) sends each as ONE statement in autocommit through group
commit; `SqliteWrites` (store/django/sqlite.py) runs each as a transaction on the store's one thread, under
SQLite's write lock. Everything else (operator writes, cancel requests, registrations, most reads, a
claim's status change) is one transaction on either database, written once: in `DjangoStore` and
`DjangoClaimed`. PostgreSQL falls back to those transactions where a statement's answer cannot tell.

Also here: what a claim answers (`Ask`, one `Claim` per row), which the store turns into handles.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from flowdeck.store import claim_order, spi
from flowdeck.store.django import models, queries, rows, verb_queries

if TYPE_CHECKING:
    from flowdeck.store.django.claimed import DjangoClaimed
    from flowdeck.store.django.tx import Tx

__all__ = ["Ask", "Claim", "Writes", "claim_order_key", "claimed_ledgers", "claimed_waits", "creation_params"]

Ledger = tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]]


@dataclass(frozen=True)
class Claim:
    """One claimed row: its state, its satisfied waits, the token, and (read with it) its ledger."""

    state: spi.ExecutionState
    satisfied: frozenset[str]
    token: int
    ledger: Ledger | None = None


def claimed_waits(
    tx: Tx, ids: Sequence[str], now: datetime
) -> tuple[dict[str, dict[str, spi.Wake]], dict[str, set[str]]]:
    """The wait rows of claimed executions, read in the claim's transaction, and which of them are
    satisfied at `now` (the claim hands both over)."""
    params: dict[str, Any] = {"now": now}
    found = tx.all(queries.WAITS_OF, params, ids=queries.in_list("id", ids, params))
    waits: dict[str, dict[str, spi.Wake]] = {}
    satisfied: dict[str, set[str]] = {}
    for eid, path, kind, at, field_name, ok in found:
        waits.setdefault(eid, {})[path] = rows.wake_of(kind, at, field_name)
        if ok:
            satisfied.setdefault(eid, set()).add(path)
    return waits, satisfied


def claimed_ledgers(
    using: str, ids: Sequence[str]
) -> tuple[dict[str, dict[str, spi.FieldData]], dict[str, list[spi.Event]]]:
    """The fields and histories of claimed rows, read in the claim's transaction (the engine's attempt then
    starts with no read of its own: `Claimed.prefetched_ledger`)."""
    fields: dict[str, dict[str, spi.FieldData]] = {}
    found = models.Field.objects.using(using).filter(execution_id__in=ids)
    for eid, name, value, tag in found.values_list("execution_id", "name", "value", "tag"):
        fields.setdefault(eid, {})[name] = spi.FieldData(value, tag)
    histories: dict[str, list[spi.Event]] = {}
    events = models.Event.objects.using(using).filter(execution_id__in=ids).order_by("execution_id", "seq")
    for eid, flow_id, seq, kind, timestamp, data in events.values_list(
        "execution_id", "flow_id", "seq", "kind", "timestamp", "data"
    ):
        histories.setdefault(eid, []).append(rows.event_of(flow_id, eid, seq, kind, timestamp, data))
    return fields, histories


def claim_order_key(claim: Claim) -> tuple[int, datetime, int]:
    """The order a claim hands its rows over in: by priority, then oldest first (`store.claim_order`)."""
    return (-claim.state.priority, claim.state.created, claim.token)


@dataclass(frozen=True)
class Ask:
    """One claim attempt: what it claimed, or when a served row comes ready with no write (and, on
    SQLite, the data version its wait watches)."""

    claims: list[Claim]
    now: datetime
    next_wake: datetime | None = None
    data_version: int | None = None


class Writes(Protocol):
    """The operations whose way to the database differs between PostgreSQL and SQLite. Each keeps the SPI
    verb's invariant exactly as the other does; none wakes this process's pollers beyond what the verb
    says (the store's hub), and every answer is given once the write is durable."""

    def claim(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> asyncio.Future[Ask]:
        """Start one claim attempt taking ready rows in `order` (one of `queries.CLAIM_ORDER`; the caller
        shields it, so it may outlive the caller's wait)."""
        ...

    async def start_listening(self) -> None:
        """Before a blocking poll: make sure other processes' writes reach the hub."""
        ...

    def commits_elsewhere(self, ask: Ask) -> Callable[[], Awaitable[None]] | None:
        """What returns once another process committed, when nothing tells the hub of it; None when
        something does."""
        ...

    def notify(self, tx: Tx, *, registration: bool) -> None:
        """In a transactional write that can make a row ready: tell the other processes at its commit."""
        ...

    async def create(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
        now: datetime,
    ) -> bool: ...

    async def create_claimed(
        self, params: dict[str, Any], fields: Mapping[str, spi.FieldData] | None, events: Sequence[spi.Event]
    ) -> Sequence[Any] | None:
        """The claimed row's columns (`creation_params` with executor and expiry), with its Created event and
        those following it (`events`, from seq 1); None if the id exists."""
        ...

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome: ...

    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        now: datetime,
        executor_id: str,
        expiry: datetime,
    ) -> tuple[spi.SignalOutcome, Claim | None]: ...

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None: ...

    # ---- under a claim (the handle's verbs; `update_status` is one transaction on both)

    async def append_event(self, handle: DjangoClaimed, events: Sequence[spi.Event]) -> spi.WriteOutcome: ...

    async def record_wait(
        self, handle: DjangoClaimed, path: str, wake: spi.Wake, events: Sequence[spi.Event]
    ) -> spi.WriteOutcome: ...

    async def renew_claim(self, handle: DjangoClaimed, lease: timedelta) -> bool: ...

    async def record_progress(
        self,
        handle: DjangoClaimed,
        path: str,
        value: spi.FieldData | None,
        events: Sequence[spi.Event],
        extra_fields: Mapping[str, spi.FieldData] | None,
        clear_cancel: bool,
    ) -> spi.ProgressOutcome: ...

    async def finish(
        self, handle: DjangoClaimed, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event]
    ) -> spi.StatusOutcome: ...

    # ---- lifecycle

    def close(self) -> None:
        """With the store: stop what serves this database beside the store's threads."""
        ...

    async def aclose(self) -> None:
        """With the store, on the running loop: close what belongs to it."""
        ...


def creation_params(
    execution_id: str,
    flow_id: str,
    hash: str,
    status: spi.Status,
    event: spi.Event,
    fields: Mapping[str, spi.FieldData] | None,
    now: datetime,
    following: Sequence[spi.Event] = (),
) -> dict[str, Any]:
    """The parameters a creating statement takes: the row, its Created event (`ev0…`) and the events
    `following` it (`ev1…`, …; `last_seq` their count), its seed fields (`s{i}…`, as
    `verb_queries.seed_fields` numbers them)."""
    params: dict[str, Any] = {
        "id": execution_id,
        "flow_id": flow_id,
        "hash": hash,
        "now": now,
        "last_seq": 1 + len(following),
        "priority": claim_order.priority_of(event.data),
        **rows.limits_columns(event.data),
        **rows.status_columns(status),
    }
    for i, values in enumerate(rows.event_values([event, *following])):
        params.update(zip(verb_queries.event_param_names(i), values, strict=True))
    for i, (name, seed) in enumerate((fields or {}).items()):
        params.update({f"s{i}n": name, f"s{i}v": seed.value, f"s{i}t": seed.tag})
    return params
