"""`PostgresWrites`: the writer seam on PostgreSQL (see store/django/writes.py).

Each hot operation is ONE statement in autocommit (`verb_queries.claimed_write`, `CREATE_AT_ONCE`, `DELIVER`,
`CLAIM_WITH_LEDGER`...), sent from the event loop by `group_commit.GroupCommit`, which commits the
statements that arrive together as one transaction: one round trip and no thread hop per write. A
statement that NOTIFYs tells the other processes' listeners; this process's pollers hear it from the hub
here. When a statement's answer cannot tell two refusals apart (a row that ended while it waited, an
ending the transactional path must judge), the operation falls back to its transaction, which is rare.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import connections

from flowdeck.store import deferral, spi
from flowdeck.store.django import concurrency_queries, queries, rows, verb_queries
from flowdeck.store.django.claimed import DjangoClaimed
from flowdeck.store.django.group_commit import GroupCommit
from flowdeck.store.django.pooling import Pooling
from flowdeck.store.django.tx import Tx
from flowdeck.store.django.wakeups import PostgresListener, listener_params, payload
from flowdeck.store.django.writes import Ask, Claim, claim_order_key, creation_params

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["PostgresWrites"]


class PostgresWrites:
    """The store's hot operations as single statements through group commit. `connections` async
    connections per event loop carry them; `listen` starts the LISTEN connection at the first blocking
    poll."""

    def __init__(self, store: DjangoStore, *, listen: bool, connections: int, pooling: Pooling) -> None:
        self._store = store
        params = listener_params(_connection(store, pooling.writes_using))
        self._write_params = {"application_name": "flowdeck-writer", **params}
        self.write_connections = connections
        self._pooling = pooling
        # one GroupCommit per loop, since async connections belong to the loop that opened them
        self.writers: dict[asyncio.AbstractEventLoop, GroupCommit] = {}
        self._writers_lock = threading.Lock()
        self._listen = listen
        self._listener: PostgresListener | None = None
        self._listener_lock = threading.Lock()

    async def _statement(
        self,
        operation: str,
        sql: str,
        params: Mapping[str, Any],
        *,
        all_rows: bool = False,
        prepare: bool = True,
    ) -> Any:
        """One statement, committed (alone or with the writes that came with it); its first row, or all of
        them (`prepare`: see `GroupCommit.run`)."""
        if self._store._closed:
            raise spi.FlowStoreError(f"{operation}: the store is closed")
        return await self._group_commit().run(operation, sql, params, all_rows=all_rows, prepare=prepare)

    def _group_commit(self) -> GroupCommit:
        loop = asyncio.get_running_loop()
        writer = self.writers.get(loop)
        if writer is None:
            with self._writers_lock:
                for gone in [old for old in self.writers if old.is_closed()]:
                    self.writers.pop(gone).abandon()
                writer = self.writers[loop] = GroupCommit(
                    self._write_params,
                    self.write_connections,
                    prepared=self._pooling.writers_prepare,
                    startup_options=not self._pooling.transaction,
                )
        return writer

    # ------------------------------------------------------------------------------------ claiming

    def claim(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> asyncio.Future[Ask]:
        return asyncio.ensure_future(self._claim(served, executor_id, expiry, limit, now, order))

    async def _claim(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> Ask:
        """The claim with its ledger in one autocommit statement; when it found nothing, the next wake-up
        instant in a second (read-only) one."""
        if limit <= 0 or not served:
            return Ask([], now)
        params: dict[str, Any] = {"now": now, "limit": limit, "executor": executor_id, "expiry": expiry}
        served_sql = queries.served_predicate(sorted(served), params)
        claim = queries.CLAIM_WITH_LEDGER.text("postgresql").format(served=served_sql, order=order)
        found = await self._statement("claim_ready", claim, params, all_rows=True, prepare=False)
        return await self._asked(found, served, now)

    async def claim_limited(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> Ask:
        """The claim of limited versions, their slots counted, in one autocommit statement
        (`concurrency_queries.CLAIM_LIMITED_AT_ONCE`, see store/django/concurrency.py); when it found
        nothing, the next wake-up instant in a second (read-only) one."""
        if limit <= 0 or not served:
            return Ask([], now)
        pairs = sorted(served)
        candidates = concurrency_queries.LIMITED_CANDIDATES.text("postgresql").format(
            served=concurrency_queries.positional_served(len(pairs)), order=order
        )
        params: dict[str, Any] = {
            "space": concurrency_queries.LOCK_SPACE,
            "flows": sorted({flow_id for flow_id, _ in pairs}),
            "candidates": candidates,
            "stamp": concurrency_queries.LIMITED_STAMP.text("postgresql"),
            "pair_flows": [flow_id for flow_id, _ in pairs],
            "pair_hashes": [hash_ for _, hash_ in pairs],
            "now": now,
            "limit": limit,
            "scan": concurrency_queries.SCAN,
            "executor": executor_id,
            "expiry": expiry,
        }
        claim = concurrency_queries.CLAIM_LIMITED_AT_ONCE.text("postgresql")
        found = await self._statement("claim_ready", claim, params, all_rows=True, prepare=False)
        return await self._asked(found, served, now)

    async def _asked(self, found: Sequence[Any], served: frozenset[tuple[str, str]], now: datetime) -> Ask:
        """A claim's answer from the rows it stamped, in claim order; when it found none, the instant the
        next of `served` may come ready with no write (a second, read-only statement)."""
        if found:
            claims = [_claim_of(row) for row in found]
            claims.sort(key=claim_order_key)
            return Ask(claims, now)
        params: dict[str, Any] = {"now": now}
        wake = queries.NEXT_WAKE.text("postgresql").format(
            served=queries.served_predicate(sorted(served), params)
        )
        (next_wake,) = await self._statement("claim_ready", wake, params, prepare=False)
        return Ask([], now, rows.to_datetime(next_wake))

    async def start_listening(self) -> None:
        if self._listen and self._listener is None:
            await asyncio.get_running_loop().run_in_executor(None, self._ensure_listening)

    def _ensure_listening(self) -> None:
        with self._listener_lock:
            if self._listener is None:
                store = self._store
                params = listener_params(_connection(store, self._pooling.listen_using))
                listener = PostgresListener(params, store.hub, store.origin)
                listener.start()
                self._listener = listener

    def commits_elsewhere(self, ask: Ask) -> Callable[[], Awaitable[None]] | None:
        return None  # the listener hears them (NOTIFY) and tells the hub

    def notify(self, tx: Tx, *, registration: bool) -> None:
        """NOTIFY in the transaction, so the other processes hear of it at its commit, and only then."""
        tx.execute(queries.NOTIFY_WAKE, {"origin": payload(self._store.origin, registration=registration)})

    # ------------------------------------------------------------------------------------ writes

    async def create(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
        now: datetime,
    ) -> bool:
        """`verb_queries.CREATE_AT_ONCE`."""
        params = creation_params(execution_id, flow_id, hash, status, event, fields, now)
        params["origin"] = self._store.origin
        at = deferral.not_before_of(event.data)
        if at is not None:
            params.update(dp=deferral.PATH, dat=at)
        seeds = verb_queries.seed_fields(len(fields or {}))
        sql = verb_queries.CREATE_AT_ONCE.text("postgresql").format(
            seeds=seeds, deferred=verb_queries.deferred_wait(at is not None)
        )
        if await self._statement("create_execution_if_absent", sql, params) is None:
            return False
        self._store.hub.changed()  # the statement NOTIFYed other processes; this one's pollers hear it here
        return True

    async def create_claimed(
        self, params: dict[str, Any], fields: Mapping[str, spi.FieldData] | None, events: Sequence[spi.Event]
    ) -> Sequence[Any] | None:
        """`verb_queries.CREATE_CLAIMED_AT_ONCE`."""
        seeds = verb_queries.seed_fields(len(fields or {}))
        history = verb_queries.opening_history(len(events))
        sql = verb_queries.CREATE_CLAIMED_AT_ONCE.text("postgresql").format(seeds=seeds, history=history)
        found: Sequence[Any] | None = await self._statement("create_claimed_if_absent", sql, params)
        return found

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome:
        """`verb_queries.DELIVER`; the transaction when its answer cannot tell (the row ended meanwhile)."""
        params = self._delivery_params(execution_id, name, value, event, now)
        sql = verb_queries.DELIVER.text("postgresql")
        locked, delivered, status = (await self._statement("signal", sql, params))[:3]
        if delivered:
            self._store.hub.changed()
            return spi.Delivered()
        answer = _undelivered(locked, status)
        if answer is not None:
            return answer
        return await self._store._signal_in_transaction(execution_id, name, value, event, now)

    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        now: datetime,
        executor_id: str,
        expiry: datetime,
    ) -> tuple[spi.SignalOutcome, Claim | None]:
        """`verb_queries.DELIVER_AND_CLAIM`; when its answer cannot tell (then nothing was written), a plain
        `signal` that claims nothing."""
        params = self._delivery_params(execution_id, name, value, event, now)
        params.update(executor=executor_id, expiry=expiry)
        sql = verb_queries.DELIVER_AND_CLAIM.text("postgresql")
        found = await self._statement("signal_and_claim", sql, params)
        locked, delivered, status = found[:3]
        if delivered:
            if found[4] is None:  # delivered without a claim: the statement NOTIFYed, as DELIVER does
                self._store.hub.changed()
                return spi.Delivered(), None
            return spi.Delivered(), _claim_of(found[4:])
        outcome = _undelivered(locked, status)
        if outcome is not None:
            return outcome, None
        return await self._store.signal(execution_id, name, value, event), None

    def _delivery_params(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> dict[str, Any]:
        """DELIVER's parameters (DELIVER_AND_CLAIM adds the claim's)."""
        [(flow_id, kind, timestamp, data)] = rows.event_values([event])
        return {
            "id": execution_id,
            "name": name,
            "value": value.value,
            "tag": value.tag,
            "now": now,
            "origin": self._store.origin,
            "ev0f": flow_id,
            "ev0k": kind,
            "ev0t": timestamp,
            "ev0d": data,
        }

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        sql = queries.EXECUTION_WITH_WAITS.text("postgresql")
        row = await self._statement("get_execution", sql, {"id": execution_id})
        if row is None:
            return None
        waits = {path: rows.wake_of(kind, at, name) for path, kind, at, name in _json(row[-1]) or ()}
        return rows.execution_state(row[:-1], waits)

    # ------------------------------------------------------------------------------------ under a claim

    async def _claimed_write(
        self,
        handle: DjangoClaimed,
        operation: str,
        events: Sequence[spi.Event],
        params: Mapping[str, Any] | None = None,
        **shape: Any,
    ) -> bool | None:
        """The write as one statement (`verb_queries.claimed_write`). None: claim lost; False: the write-once
        gate or `unless_cancelled` refused (nothing written); True: applied. Whenever the claim held, the
        cancel flag is refreshed from the row."""
        store = self._store
        values = handle._key(store.clock.now())
        values["origin"] = store.origin
        if params:
            values.update(params)
        for i, event in enumerate(events):
            flow_key, kind_key, time_key, data_key = verb_queries.event_param_names(i)
            values[flow_key] = event.flow_id
            values[kind_key] = event.kind.value
            values[time_key] = event.timestamp
            values[data_key] = event.data_json()
        sql = verb_queries.claimed_write(events=len(events), **shape)
        found = await self._statement(operation, sql, values)
        if found is None:
            return None
        went, cancel, reason = found[:3]
        handle.heard_cancel(cancel, reason)
        if not went:
            return False
        if shape.get("notify") and found[3]:
            store.hub.changed()
        return True

    async def append_event(self, handle: DjangoClaimed, events: Sequence[spi.Event]) -> spi.WriteOutcome:
        done = await self._claimed_write(handle, "append_event", events)
        return spi.WriteOutcome.CLAIM_LOST if done is None else spi.WriteOutcome.APPLIED

    async def record_wait(
        self, handle: DjangoClaimed, path: str, wake: spi.Wake, events: Sequence[spi.Event]
    ) -> spi.WriteOutcome:
        wait = rows.wait_columns(path, wake)
        done = await self._claimed_write(handle, "record_wait", events, wait, insert_wait=True)
        return spi.WriteOutcome.CLAIM_LOST if done is None else spi.WriteOutcome.APPLIED

    async def renew_claim(self, handle: DjangoClaimed, lease: timedelta) -> bool:
        now = self._store.clock.now()
        sql = queries.RENEW_CLAIM.text("postgresql")
        found = await self._statement("renew_claim", sql, {**handle._key(now), "expiry": now + lease})
        if found is None:
            return False
        handle.heard_cancel(found[0], found[1])
        return True

    async def record_progress(
        self,
        handle: DjangoClaimed,
        path: str,
        value: spi.FieldData | None,
        events: Sequence[spi.Event],
        extra_fields: Mapping[str, spi.FieldData] | None,
        clear_cancel: bool,
    ) -> spi.ProgressOutcome:
        params: dict[str, Any] = {"path": path}
        if value is not None:
            params.update(value=value.value, tag=value.tag)
        for i, (name, extra) in enumerate((extra_fields or {}).items()):
            params.update({f"x{i}n": name, f"x{i}v": extra.value, f"x{i}t": extra.tag})
        done = await self._claimed_write(
            handle,
            "record_progress",
            events,
            params,
            gate="field" if value is not None else "mark",
            extra_fields=len(extra_fields or {}),
            delete_waits="path",
            clear_cancel=clear_cancel,
        )
        if done is None:
            return spi.ProgressOutcome.CLAIM_LOST
        return spi.ProgressOutcome.RECORDED if done else spi.ProgressOutcome.ALREADY_RECORDED

    async def finish(
        self, handle: DjangoClaimed, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event]
    ) -> spi.StatusOutcome:
        """One statement per ending; the transaction for a refusal only it answers (a status on the wrong
        side of terminal). A limited execution's ending gives its slots back: its statement NOTIFYs
        (`freed`)."""
        freed = handle.state.concurrency is not None
        match outcome:
            case spi.Terminal(status, event) if status.terminal:
                done = await self._claimed_write(
                    handle,
                    "finish",
                    [*preceding, event],
                    rows.status_columns(status),
                    set_status=True,
                    release=True,
                    delete_waits="all",
                    unless_cancelled=isinstance(status, spi.Completed),
                    notify=freed,
                    freed=freed,
                )
                if done is False:  # a Completed ending refused by the cancel request on the locked row
                    return spi.StatusOutcome.CANCEL_REQUESTED
            case spi.Suspended(waiting_on):
                keep = sorted(waiting_on)
                done = await self._claimed_write(
                    handle,
                    "finish",
                    preceding,
                    {f"keep{i}": path for i, path in enumerate(keep)},
                    release=True,
                    delete_waits="except",
                    keep=len(keep),
                    notify=True,
                    freed=freed,
                )
            case spi.Stop(status, event) if isinstance(status, spi.Stopped):
                done = await self._claimed_write(
                    handle,
                    "finish",
                    [*preceding, event],
                    rows.status_columns(status),
                    set_status=True,
                    release=True,
                    delete_waits="all",
                    notify=freed,
                    freed=freed,
                )
            case _:
                return await handle._finish_in_transaction(outcome, preceding)
        return spi.StatusOutcome.CLAIM_LOST if done is None else spi.StatusOutcome.APPLIED

    # ------------------------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the listener and every loop's writer."""
        if self._listener is not None:
            self._listener.stop()
        with self._writers_lock:
            for writer in self.writers.values():
                writer.stop_soon()
            self.writers.clear()

    async def aclose(self) -> None:
        writer = self.writers.pop(asyncio.get_running_loop(), None)
        if writer is not None:
            await writer.aclose()


def _connection(store: DjangoStore, alias: str | None = None) -> Any:
    """The Django connection of `alias` (None: the store's own): a psycopg connection copies its settings."""
    return connections[alias or store.using]


def _json(value: Any) -> Any:
    """A JSON aggregate as the driver answers it (decoded, or text when Django registered a text loader)."""
    return json.loads(value) if isinstance(value, str) else value


def _undelivered(locked: bool, status: str | None) -> spi.SignalOutcome | None:
    """What a one-statement delivery that delivered nothing answers: already delivered (it locked the row),
    missing or ended (its status says which); None when the row ended only while the statement waited."""
    if locked:
        return spi.AlreadyDelivered()
    if status is None:
        return spi.AlreadyTerminal(spi.Cancelled())
    ended = rows.status_of(status)
    return spi.AlreadyTerminal(ended) if ended.terminal else None


def _claim_of(row: Sequence[Any]) -> Claim:
    """One row of CLAIM_WITH_LEDGER: the execution's columns, then its waits, fields and history."""
    width = len(queries.EXECUTION_COLUMNS)
    columns, (waits_json, fields_json, events_json) = row[:width], row[width : width + 3]
    eid = columns[0]
    waits: dict[str, spi.Wake] = {}
    satisfied: set[str] = set()
    for path, kind, at, field_name, ok in _json(waits_json) or ():
        waits[path] = rows.wake_of(kind, at, field_name)
        if ok:
            satisfied.add(path)
    fields = {name: spi.FieldData(value, tag) for name, value, tag in _json(fields_json) or ()}
    history = [
        rows.event_of(event_flow, eid, seq, kind, timestamp, data)
        for seq, event_flow, kind, timestamp, data in _json(events_json) or ()
    ]
    state = rows.execution_state(columns, waits)
    return Claim(state, frozenset(satisfied), int(columns[6]), (fields, history))
