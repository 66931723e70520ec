"""`DjangoStore`: the FlowStore on a Django database (PostgreSQL in production, SQLite embedded).

Every SPI call is one `transaction.atomic` run on a dedicated thread pool (Django connections are per
thread, so N threads hold N connections); the event loop never blocks on the database. On PostgreSQL the
hot writes (every write under a claim, starts, signals, renewals) are single statements instead, sent from
the event loop by `group_commit.GroupCommit`, which commits the writes that arrive together as one
transaction. Every time the
store judges (lease expiry, sleep deadlines) comes from the injected clock and is passed into SQL, so a
`ManualClock` drives the store exactly as it drives the memory store.

Blocked `claim_ready` callers wait on a `WakeHub`: writes that can make a row ready wake them directly
(after commit) and, on PostgreSQL, NOTIFY the other processes, whose listener wakes theirs. A caller also
wakes on its own at the earliest sleep deadline or lease expiry among the rows it serves, and asks once
more at its deadline. SQLite callers watch `PRAGMA data_version` every 25 ms for other processes' commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import json
import threading
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import connections, transaction
from django.db.models import Exists, F, OuterRef, Q

from store import counts, feed, heartbeats, spi
from store.clock import SYSTEM_CLOCK, Clock
from store.django import counts as django_counts
from store.django import feed as django_feed
from store.django import heartbeats as django_heartbeats
from store.django import models, queries, rows
from store.django.errors import translated
from store.django.group_commit import GroupCommit
from store.django.wakeups import PostgresListener, WakeHub, listener_params, payload
from store.held import HeldClaim

__all__ = ["DjangoStore"]

T = TypeVar("T")

# How often a blocked SQLite caller looks for other processes' commits (real time).
SQLITE_WATCH_INTERVAL = 0.025
# A page bound that no database overflows on ("all of them").
_ALL = 2**62
# An id-prefix search matching at most this many executions sorts its matches for the page (see
# `_page_of_few`); more matches are dense enough for the walk down the created index to find a page soon.
FEW_TO_SORT = 20_000


class Tx:
    """One transaction's cursor: runs the named queries, adapting times for the backend."""

    def __init__(self, cursor: Any, connection: Any) -> None:
        self.cursor = cursor
        self.connection = connection
        self.vendor: str = connection.vendor

    def _adapt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ops = self.connection.ops
        return {
            k: ops.adapt_datetimefield_value(v) if isinstance(v, datetime) else v for k, v in params.items()
        }

    def execute(self, query: queries.Query, params: Mapping[str, Any] | None = None, **fmt: str) -> None:
        sql = query.text(self.vendor)
        if fmt:
            sql = sql.format(**fmt)
        self.cursor.execute(sql, self._adapt(params or {}))

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
        values = queries.event_rows(execution_id, first_seq, rows.event_values(events), params)
        self.execute(queries.INSERT_EVENTS, params, rows=values)

    def rollback(self) -> None:
        """Undo everything this transaction did (a refused write changes nothing)."""
        transaction.set_rollback(True, using=self.connection.alias)


@dataclass(frozen=True)
class _Opened:
    """A write the acceptance rule let through: the cancel flag it answered, the seqs it reserved."""

    cancel: tuple[bool, str]
    first_seq: int
    events: Sequence[spi.Event]


@dataclass(frozen=True)
class _Claim:
    state: spi.ExecutionState
    satisfied: frozenset[str]
    token: int
    ledger: tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None = None


@dataclass(frozen=True)
class _Ask:
    """One claim attempt: what it claimed, or when a served row comes ready with no write."""

    claims: list[_Claim]
    now: datetime
    next_wake: datetime | None = None
    data_version: int | None = None


class _Woken(enum.Enum):
    WRITE = "write"
    REGISTRATION = "registration"
    TIMED_OUT = "timed-out"


class DjangoStore(spi.FlowStore):
    """A `FlowStore` on the Django database alias `using`.

    `pool_size` is the number of threads (hence connections) serving it on PostgreSQL (default 8); SQLite
    always gets one (it serializes writers anyway, and the cross-process watch needs one connection).
    `write_connections` (PostgreSQL) is the number of async connections per event loop that carry the
    one-statement writes, claims and reads (`group_commit.GroupCommit`; default 2: one batch in flight
    while the next gathers). `listen` (PostgreSQL) starts the LISTEN connection at the first blocking
    `claim_ready`. Call `close()`
    (or `await aclose()`) when done.
    """

    def __init__(
        self,
        using: str = "default",
        clock: Clock = SYSTEM_CLOCK,
        *,
        pool_size: int | None = None,
        listen: bool = True,
        write_connections: int = 2,
    ) -> None:
        self.using = using
        self.clock = clock
        self.vendor: str = connections[using].vendor
        if self.vendor not in ("postgresql", "sqlite"):
            raise ValueError(f"DjangoStore serves PostgreSQL and SQLite, not {self.vendor!r}")
        # SQLite: always one connection. Its writers are serialized anyway, and the cross-process watch
        # compares `PRAGMA data_version` readings, which only mean something on one connection.
        self.pool_size = (pool_size or 8) if self.vendor == "postgresql" else 1
        self._pool = ThreadPoolExecutor(self.pool_size, thread_name_prefix=f"flowdeck-store-{using}")
        self.hub = WakeHub()
        # names this store's NOTIFYs, so its own listener skips what its callers already heard
        self.origin = uuid.uuid4().hex
        self._listen = listen and self.vendor == "postgresql"
        self._listener: PostgresListener | None = None
        self._listener_lock = threading.Lock()
        # PostgreSQL's one-statement writes go out from the event loop (see group_commit.py), one
        # GroupCommit per loop, since async connections belong to the loop that opened them.
        self._write_params: dict[str, Any] = {}
        if self.vendor == "postgresql":
            params = listener_params(connections[using])
            self._write_params = {"application_name": "flowdeck-writer", **params}
        self.write_connections = write_connections
        self._writers: dict[asyncio.AbstractEventLoop, GroupCommit] = {}
        self._writers_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------------------------ plumbing

    async def _run(self, operation: str, work: Callable[[Tx], T]) -> T:
        return await self._submit(operation, self._in_transaction, operation, work)

    async def _submit(self, operation: str, function: Callable[..., T], *args: Any) -> T:
        """Run `function` on the store's threads; a closed store answers FlowStoreError, not a pool error."""
        if self._closed:
            raise spi.FlowStoreError(f"{operation}: the store is closed")
        try:
            work = asyncio.get_running_loop().run_in_executor(self._pool, function, *args)
        except RuntimeError as error:  # closed between the check and the submit
            raise spi.FlowStoreError(f"{operation}: the store is closed") from error
        return await work

    def _in_transaction(self, operation: str, work: Callable[[Tx], T]) -> T:
        with translated(operation, self.using), transaction.atomic(using=self.using):
            connection = connections[self.using]
            with connection.cursor() as cursor:
                return work(Tx(cursor, connection))

    async def _run_statement(
        self,
        operation: str,
        sql: str,
        params: Mapping[str, Any],
        *,
        all_rows: bool = False,
        prepare: bool = True,
    ) -> Any:
        """PostgreSQL: one statement, committed (alone or with the writes that came with it); its first
        row, or all of them (`prepare`: see `GroupCommit.run`). SQLite runs it on the store's thread in
        autocommit."""
        if self._closed:
            raise spi.FlowStoreError(f"{operation}: the store is closed")
        if self.vendor != "postgresql":
            return await self._submit(operation, self._statement, operation, sql, params, all_rows)
        writer = self._group_commit()
        return await writer.run(operation, sql, params, all_rows=all_rows, prepare=prepare)

    def _group_commit(self) -> GroupCommit:
        loop = asyncio.get_running_loop()
        writer = self._writers.get(loop)
        if writer is None:
            with self._writers_lock:
                for gone in [old for old in self._writers if old.is_closed()]:
                    self._writers.pop(gone).abandon()
                writer = self._writers[loop] = GroupCommit(self._write_params, self.write_connections)
        return writer

    def _statement(self, operation: str, sql: str, params: Mapping[str, Any], all_rows: bool) -> Any:
        with translated(operation, self.using):
            connection = connections[self.using]
            with connection.cursor() as cursor:
                cursor.execute(sql, Tx(cursor, connection)._adapt(params))
                return cursor.fetchall() if all_rows else cursor.fetchone()

    def _lock_row(self, tx: Tx, execution_id: str) -> _Locked | None:
        """Read and lock a row for a decision made in Python. A claim running meanwhile skips a locked row
        (SKIP LOCKED) even when it was ready, and a refusal writes nothing that would wake it again: so
        every lock wakes pollers at commit (on PostgreSQL one NOTIFY per transaction, deduplicated)."""
        row = _Locked.read(tx, execution_id)
        if row is not None:
            self._wake_after_commit(tx)
        return row

    def _wake_after_commit(self, tx: Tx, *, registration: bool = False) -> None:
        """This write can make a row ready: wake local callers at commit, NOTIFY the other processes."""
        if tx.vendor == "postgresql":
            tx.execute(queries.NOTIFY_WAKE, {"origin": payload(self.origin, registration=registration)})
        transaction.on_commit(lambda: self.hub.changed(registration=registration), using=self.using)

    def close(self) -> None:
        """Stop the listener, close this store's connections and its threads."""
        if self._closed:
            return
        self._closed = True
        self.hub.changed()  # blocked callers ask again and learn that the store is closed
        if self._listener is not None:
            self._listener.stop()
        with self._writers_lock:
            for writer in self._writers.values():
                writer.stop_soon()
            self._writers.clear()
        barrier = threading.Barrier(self.pool_size, timeout=2)

        def close_connection() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()  # one task per thread, so every thread closes its own connection
            connections[self.using].close()

        for _ in range(self.pool_size):
            self._pool.submit(close_connection)
        self._pool.shutdown(wait=True)

    async def aclose(self) -> None:
        writer = self._writers.pop(asyncio.get_running_loop(), None)
        if writer is not None:
            await writer.aclose()
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def reset(self) -> None:
        """Tests: empty every table (blocking). The token source keeps counting."""

        def work(tx: Tx) -> None:
            for statement in queries.TRUNCATE_ALL.text(tx.vendor).split(";"):
                tx.cursor.execute(statement)

        self._pool.submit(self._in_transaction, "reset", work).result()

    def _ensure_listening(self) -> None:
        if not self._listen or self._listener is not None:
            return
        with self._listener_lock:
            if self._listener is None:
                params = listener_params(connections[self.using])
                listener = PostgresListener(params, self.hub, self.origin)
                listener.start()
                self._listener = listener

    # ------------------------------------------------------------------------------------ claiming

    async def claim_ready(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        lease: timedelta,
        limit: int,
        timeout: timedelta,
    ) -> Sequence[spi.Claimed]:
        hub = self.hub
        if timeout > timedelta(0) and self._listen and self._listener is None:
            await asyncio.get_running_loop().run_in_executor(None, self._ensure_listening)
        # Taken before the first ask: only a change made after the call began wakes it.
        generation, registrations = hub.generation, hub.registrations
        deadline = self.clock.monotonic() + timeout.total_seconds()
        woken = False
        while True:
            ask = await self._ask(served, executor_id, lease, limit)
            if ask.claims:
                return self._handles(ask)
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                # a wake that finds the time up still owes one ask (the clock moved since the last one)
                return self._handles(await self._ask(served, executor_id, lease, limit)) if woken else []
            alarm = (ask.next_wake - ask.now).total_seconds() if ask.next_wake is not None else None
            woken_by = await self._wait(generation, registrations, remaining, alarm, ask.data_version)
            if woken_by is not _Woken.WRITE:
                # at the deadline (a sleep can come due with no write), or after a registration (the caller
                # polls again with its newer served set): one last ask
                return self._handles(await self._ask(served, executor_id, lease, limit))
            generation, woken = hub.generation, True

    def _handles(self, ask: _Ask) -> list[spi.Claimed]:
        return [_DjangoClaimed(self, c.state, c.satisfied, c.token, c.ledger) for c in ask.claims]

    async def _ask(
        self, served: frozenset[tuple[str, str]], executor_id: str, lease: timedelta, limit: int
    ) -> _Ask:
        now = self.clock.now()  # the one wall-clock read of an ask
        if self._closed:
            raise spi.FlowStoreError("claim_ready: the store is closed")
        work: asyncio.Future[_Ask]
        try:
            if self.vendor == "postgresql":
                work = asyncio.ensure_future(self._claim_pg(served, executor_id, now + lease, limit, now))
            else:
                claim = functools.partial(
                    self._claim_in,
                    served=served,
                    executor_id=executor_id,
                    expiry=now + lease,
                    limit=limit,
                    now=now,
                )
                args = (self._in_transaction, "claim_ready", claim)
                work = asyncio.get_running_loop().run_in_executor(self._pool, *args)
        except RuntimeError as error:
            raise spi.FlowStoreError("claim_ready: the store is closed") from error
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            # The claim may commit after the caller stopped waiting: hand its rows straight back.
            work.add_done_callback(self._give_back)
            raise

    def _give_back(self, work: asyncio.Future[_Ask]) -> None:
        if work.cancelled() or work.exception() is not None:
            return
        for claim in work.result().claims:
            handle = _DjangoClaimed(self, claim.state, claim.satisfied, claim.token)
            if self._closed:
                return  # the lease will lapse instead
            self._pool.submit(
                self._in_transaction,
                "give back",
                lambda tx, h=handle: h._finish_in(
                    tx, spi.Suspended(frozenset(h.state.waits)), (), self.clock.now()
                ),
            )

    async def _claim_pg(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
    ) -> _Ask:
        """PostgreSQL: the claim with its ledger in one autocommit statement; when it found nothing, the
        next wake-up instant in a second (read-only) one."""
        if limit <= 0 or not served:
            return _Ask([], now)
        params: dict[str, Any] = {"now": now, "limit": limit, "executor": executor_id, "expiry": expiry}
        served_sql = queries.served_predicate(sorted(served), params)
        claim = queries.CLAIM_WITH_LEDGER.text(self.vendor).format(served=served_sql)
        found = await self._run_statement("claim_ready", claim, params, all_rows=True, prepare=False)
        if not found:
            wake = queries.NEXT_WAKE.text(self.vendor).format(served=served_sql)
            (next_wake,) = await self._run_statement("claim_ready", wake, params, prepare=False)
            return _Ask([], now, rows.to_datetime(next_wake))
        claims = [_claim_of(row) for row in found]
        claims.sort(key=lambda c: (c.state.created, c.token))
        return _Ask(claims, now)

    def _claim_in(
        self,
        tx: Tx,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
    ) -> _Ask:
        """SQLite: the claim in the store's IMMEDIATE transaction (PostgreSQL's is `_claim_pg`)."""
        if limit <= 0 or not served:
            return _Ask([], now)
        params: dict[str, Any] = {"now": now, "limit": limit}
        served_sql = queries.served_predicate(sorted(served), params)
        ids = [r[0] for r in tx.all(queries.CLAIM_READY, params, served=served_sql)]
        if not ids:
            (next_wake,) = tx.one(queries.NEXT_WAKE, params, served=served_sql)
            (version,) = tx.one(queries.DATA_VERSION)
            return _Ask([], now, rows.to_datetime(next_wake), version)
        claims = self._handed_over(tx, self._stamp_claims(tx, ids, executor_id, expiry, now), now)
        claims.sort(key=lambda c: (c.state.created, c.token))
        return _Ask(claims, now)

    def _stamp_claims(
        self, tx: Tx, ids: Sequence[str], executor_id: str, expiry: datetime, now: datetime
    ) -> list[Sequence[Any]]:
        """SQLite: claim the rows `ids` for `executor_id`, each under a fresh token; their columns."""
        (last,) = tx.one(queries.TAKE_TOKENS, {"n": len(ids)})
        stamped = []
        for i, eid in enumerate(ids):
            stamp = {"executor": executor_id, "expiry": expiry, "now": now, "id": eid}
            stamp["token"] = last - len(ids) + 1 + i
            stamped.append(tx.one(queries.STAMP_CLAIM, stamp))
        return stamped

    def _handed_over(self, tx: Tx, claimed: Sequence[Sequence[Any]], now: datetime) -> list[_Claim]:
        """SQLite: what a claim hands over for each claimed row: its waits (and which are satisfied at
        `now`), its fields and its history, read in the claim's transaction."""
        ids = [r[0] for r in claimed]
        waits, satisfied = self._waits_in(tx, ids, now)
        fields, histories = self._ledgers_in(ids)
        return [
            _Claim(
                rows.execution_state(r, waits.get(r[0], {})),
                frozenset(satisfied.get(r[0], ())),
                int(r[6]),
                (fields.get(r[0], {}), histories.get(r[0], [])),
            )
            for r in claimed
        ]

    def _ledgers_in(
        self, ids: Sequence[str]
    ) -> tuple[dict[str, dict[str, spi.FieldData]], dict[str, list[spi.Event]]]:
        """The fields and histories of the claimed rows, read in the claim's transaction (the engine's
        attempt then starts with no read of its own: `Claimed.prefetched_ledger`)."""
        fields: dict[str, dict[str, spi.FieldData]] = {}
        found = models.Field.objects.using(self.using).filter(execution_id__in=ids)
        for eid, name, value, tag in found.values_list("execution_id", "name", "value", "tag"):
            fields.setdefault(eid, {})[name] = spi.FieldData(value, tag)
        histories: dict[str, list[spi.Event]] = {}
        events = (
            models.Event.objects.using(self.using)
            .filter(execution_id__in=ids)
            .order_by("execution_id", "seq")
        )
        for eid, flow_id, seq, kind, timestamp, data in events.values_list(
            "execution_id", "flow_id", "seq", "kind", "timestamp", "data"
        ):
            histories.setdefault(eid, []).append(rows.event_of(flow_id, eid, seq, kind, timestamp, data))
        return fields, histories

    def _waits_in(
        self, tx: Tx, ids: Sequence[str], now: datetime
    ) -> tuple[dict[str, dict[str, spi.Wake]], dict[str, set[str]]]:
        params: dict[str, Any] = {"now": now}
        found = tx.all(queries.WAITS_OF, params, ids=queries.in_list("id", ids, params))
        waits: dict[str, dict[str, spi.Wake]] = {}
        satisfied: dict[str, set[str]] = {}
        for eid, path, kind, at, field_name, ok in found:
            waits.setdefault(eid, {})[path] = rows.wake_of(kind, at, field_name)
            if ok:
                satisfied.setdefault(eid, set()).add(path)
        return waits, satisfied

    async def _wait(
        self,
        generation: int,
        registrations: int,
        remaining: float,
        alarm: float | None,
        data_version: int | None,
    ) -> _Woken:
        """Wait for a change, the deadline, or the alarm (a served row coming ready with no write).

        One `clock.sleep` per caller, for whichever of deadline and alarm comes first."""
        hub = self.hub
        changed = hub.waiter()  # registered before the checks, so no change slips between them
        by_alarm = alarm is not None and alarm < remaining
        sleeper = asyncio.ensure_future(self.clock.sleep(max(alarm, 0.0) if by_alarm else remaining))
        tasks: set[asyncio.Future[Any]] = {changed, sleeper}
        if data_version is not None:
            tasks.add(asyncio.ensure_future(self._watch_data_version(data_version)))
        try:
            if hub.registrations == registrations and hub.generation == generation:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hub.forget(changed)
            for task in tasks:
                task.cancel()
        if hub.registrations != registrations:
            return _Woken.REGISTRATION
        if sleeper.done() and not sleeper.cancelled() and not by_alarm:
            return _Woken.TIMED_OUT
        return _Woken.WRITE

    async def _watch_data_version(self, seen: int) -> None:
        """SQLite: return once another connection (another process) has committed."""
        while True:
            await asyncio.sleep(SQLITE_WATCH_INTERVAL)
            # outside a transaction: an IMMEDIATE one would take the write lock just to read a counter
            sql = queries.DATA_VERSION.text("sqlite")
            (version,) = await self._submit("watch", self._statement, "watch", sql, {}, False)
            if version != seen:
                return

    # ------------------------------------------------------------------------------------ writes

    async def create_execution_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None = None,
    ) -> bool:
        now = self.clock.now()
        if self.vendor == "postgresql":
            return await self._create_in_one_statement(
                execution_id, flow_id, hash, status, event, fields, now
            )

        def work(tx: Tx) -> bool:
            params = {"id": execution_id, "flow_id": flow_id, "hash": hash, "now": now}
            params.update(rows.status_columns(status))
            if tx.vendor == "sqlite":
                (params["serial"],) = tx.one(queries.TAKE_TOKENS, {"n": 1})
            if tx.one(queries.CREATE_EXECUTION, params) is None:
                tx.rollback()
                return False
            for name, data in (fields or {}).items():
                tx.execute(
                    queries.INSERT_SEED_FIELD,
                    {"id": execution_id, "name": name, "value": data.value, "tag": data.tag},
                )
            tx.insert_events(execution_id, 1, [event])
            self._wake_after_commit(tx)
            return True

        return await self._run("create_execution_if_absent", work)

    async def _create_in_one_statement(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
        now: datetime,
    ) -> bool:
        """PostgreSQL's one-round-trip `create_execution_if_absent` (`queries.CREATE_AT_ONCE`)."""
        params = _creation_params(execution_id, flow_id, hash, status, event, fields, now)
        params["origin"] = self.origin
        sql = queries.CREATE_AT_ONCE.text("postgresql").format(seeds=queries.seed_fields(len(fields or {})))
        if await self._run_statement("create_execution_if_absent", sql, params) is None:
            return False
        self.hub.changed()  # the statement NOTIFYed the other processes; this one's pollers hear it here
        return True

    async def create_claimed_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None = None,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> spi.Claimed | None:
        # Wakes no poller, here or elsewhere: the row is nobody else's until its lease lapses, and then a
        # poll finds it as any lapsed claim (NEXT_WAKE counts its expiry among a caller's wake-ups).
        now = self.clock.now()
        params = _creation_params(execution_id, flow_id, hash, status, event, fields, now)
        params.update(executor=executor_id, expiry=now + lease)
        if self.vendor == "postgresql":
            sql = queries.CREATE_CLAIMED_AT_ONCE.text("postgresql").format(
                seeds=queries.seed_fields(len(fields or {}))
            )
            found = await self._run_statement("create_claimed_if_absent", sql, params)
        else:
            found = await self._run(
                "create_claimed_if_absent", lambda tx: self._create_claimed_in(tx, params, fields, event)
            )
        if found is None:
            return None
        ledger = (dict(fields or {}), [event.with_seq(1)])
        return _DjangoClaimed(self, rows.execution_state(found, {}), frozenset(), int(found[6]), ledger)

    def _create_claimed_in(
        self,
        tx: Tx,
        params: dict[str, Any],
        fields: Mapping[str, spi.FieldData] | None,
        event: spi.Event,
    ) -> Sequence[Any] | None:
        """SQLite's `create_claimed_if_absent`: the claimed row (serial and token reserved together), its
        seed fields and its Created event; the row's columns, or None (rolled back) when the id exists."""
        (last,) = tx.one(queries.TAKE_TOKENS, {"n": 2})
        found = tx.one(queries.CREATE_CLAIMED, {**params, "serial": last - 1, "token": last})
        if found is None:
            tx.rollback()
            return None
        eid = params["id"]
        for name, data in (fields or {}).items():
            tx.execute(
                queries.INSERT_SEED_FIELD, {"id": eid, "name": name, "value": data.value, "tag": data.tag}
            )
        tx.insert_events(eid, 1, [event])
        return found

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        now = self.clock.now()
        if self.vendor == "postgresql":
            answer = await self._deliver_in_one_statement(execution_id, name, value, event, now)
            if answer is not None:
                return answer

        def work(tx: Tx) -> spi.SignalOutcome:
            outcome = self._deliver_in(tx, execution_id, name, value, event, now)
            if isinstance(outcome, spi.Delivered):
                self._wake_after_commit(tx)
            return outcome

        return await self._run("signal", work)

    def _deliver_in(
        self, tx: Tx, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome:
        """The transactional delivery (I3), without its wake-up; a refusal writes nothing."""
        opened = tx.one(queries.OPEN_DELIVERY, {"id": execution_id, "now": now})
        if opened is None:
            row = self._lock_row(tx, execution_id)
            return spi.AlreadyTerminal(row.status if row is not None else spi.Cancelled())
        field = {"id": execution_id, "name": name, "value": value.value, "tag": value.tag}
        if tx.one(queries.INSERT_FIELD_IF_ABSENT, field) is None:
            tx.rollback()
            return spi.AlreadyDelivered()
        tx.insert_events(execution_id, opened[0], [event])
        return spi.Delivered()

    async def _deliver_in_one_statement(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome | None:
        """PostgreSQL's one-round-trip `signal`; None when only the transactional path can tell."""
        params = self._delivery_params(execution_id, name, value, event, now)
        locked, delivered, status = (
            await self._run_statement("signal", queries.DELIVER.text("postgresql"), params)
        )[:3]
        if delivered:
            self.hub.changed()
            return spi.Delivered()
        return _undelivered(locked, status)

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
            "origin": self.origin,
            "ev0f": flow_id,
            "ev0k": kind,
            "ev0t": timestamp,
            "ev0d": data,
        }

    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> tuple[spi.SignalOutcome, spi.Claimed | None]:
        now = self.clock.now()
        if self.vendor == "postgresql":
            answer = await self._deliver_and_claim_in_one_statement(
                execution_id, name, value, event, now, executor_id, now + lease
            )
            if answer is not None:
                return answer
            return await self.signal(execution_id, name, value, event), None
        claim = functools.partial(
            self._deliver_and_claim_in,
            execution_id=execution_id,
            name=name,
            value=value,
            event=event,
            now=now,
            executor_id=executor_id,
            expiry=now + lease,
        )
        outcome, found = await self._run("signal_and_claim", claim)
        if found is None:
            return outcome, None
        return outcome, _DjangoClaimed(self, found.state, found.satisfied, found.token, found.ledger)

    async def _deliver_and_claim_in_one_statement(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        now: datetime,
        executor_id: str,
        expiry: datetime,
    ) -> tuple[spi.SignalOutcome, spi.Claimed | None] | None:
        """PostgreSQL's one-round-trip `signal_and_claim` (`queries.DELIVER_AND_CLAIM`); None when only the
        transactional path can tell (then nothing was written)."""
        params = self._delivery_params(execution_id, name, value, event, now)
        params.update(executor=executor_id, expiry=expiry)
        found = await self._run_statement(
            "signal_and_claim", queries.DELIVER_AND_CLAIM.text("postgresql"), params
        )
        locked, delivered, status = found[:3]
        if delivered:
            if found[4] is None:  # delivered without a claim: the statement NOTIFYed, as DELIVER does
                self.hub.changed()
                return spi.Delivered(), None
            c = _claim_of(found[4:])
            return spi.Delivered(), _DjangoClaimed(self, c.state, c.satisfied, c.token, c.ledger)
        outcome = _undelivered(locked, status)
        return None if outcome is None else (outcome, None)

    def _deliver_and_claim_in(
        self,
        tx: Tx,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        now: datetime,
        executor_id: str,
        expiry: datetime,
    ) -> tuple[spi.SignalOutcome, _Claim | None]:
        """SQLite's `signal_and_claim`: `signal`'s transaction, then the claim's pieces (`_stamp_claims`,
        `_handed_over`) for the one row when the delivery made it ready for its deliverer (BEGIN IMMEDIATE
        already excludes every other writer); pollers are woken only when it claimed nothing."""
        outcome = self._deliver_in(tx, execution_id, name, value, event, now)
        if not isinstance(outcome, spi.Delivered):
            return outcome, None
        if tx.one(queries.DELIVERY_CLAIMABLE, {"id": execution_id, "name": name, "now": now}) is None:
            self._wake_after_commit(tx)
            return outcome, None
        claimed = self._stamp_claims(tx, [execution_id], executor_id, expiry, now)
        [claim] = self._handed_over(tx, claimed, now)
        return outcome, claim

    async def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> spi.CancelOutcome:
        now = self.clock.now()

        def work(tx: Tx) -> spi.CancelOutcome:
            row = self._lock_row(tx, execution_id)
            if row is None:
                return spi.AlreadyTerminal(spi.Cancelled())
            if row.status.terminal:
                return spi.AlreadyTerminal(row.status)
            stopped = isinstance(row.status, spi.Stopped)
            if row.cancel_requested and not stopped:
                return spi.AlreadyRequested()
            answer: spi.CancelOutcome = spi.AlreadyRequested() if row.cancel_requested else spi.Accepted()
            event = spi.Event(
                spi.EventKind.CANCEL_REQUESTED,
                row.flow_id,
                execution_id,
                now,
                {"reason": reason, "actor": actor},
            )
            row.write(
                tx,
                now,
                [event],
                status=_lifted(row.status) if stopped else row.status,
                cancel_requested=True,
                cancel_reason=row.cancel_reason if row.cancel_requested else reason,
            )
            self._wake_after_commit(tx)
            return answer

        return await self._run("request_cancel", work)

    async def put_workflow(self, info: spi.WorkflowInfo) -> None:
        now = self.clock.now()

        def work(tx: Tx) -> None:
            db = self.using
            workflow, _ = models.Workflow.objects.using(db).update_or_create(
                id=info.id, defaults={"latest_hash": info.structural_hash, "updated": now}
            )
            models.WorkflowVersion.objects.using(db).update_or_create(
                workflow=workflow,
                hash=info.structural_hash,
                defaults={"info": info.model_dump_json()},
                create_defaults={"info": info.model_dump_json(), "registered": now},
            )
            self._wake_after_commit(tx, registration=True)

        await self._run("put_workflow", work)

    # ---- operator writes

    async def resume(self, execution_id: str, hash: str, event: spi.Event) -> spi.OperatorOutcome:
        now = self.clock.now()

        def work(tx: Tx) -> spi.OperatorOutcome:
            row = self._lock_row(tx, execution_id)
            refused = _operator_refusal(row, now, claim_matters=True)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            status = _lifted(row.status) if isinstance(row.status, spi.Stopped) else row.status
            row.write(tx, now, [event], status=status, hash=hash)
            self._wake_after_commit(tx)
            return spi.OperatorOutcome.APPLIED

        return await self._run("resume", work)

    async def answer(
        self, execution_id: str, path: str, value: spi.FieldData | None, event: spi.Event
    ) -> spi.OperatorOutcome:
        now = self.clock.now()

        def work(tx: Tx) -> spi.OperatorOutcome:
            row = self._lock_row(tx, execution_id)
            refused = _operator_refusal(row, now, claim_matters=False)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            if not isinstance(row.status, spi.Stopped):
                return spi.OperatorOutcome.NOT_STOPPED
            at = {"id": execution_id, "path": path}
            if tx.one(queries.RECORDED_AT, at)[0]:
                return spi.OperatorOutcome.ALREADY_RECORDED
            if value is not None:
                tx.execute(
                    queries.INSERT_FIELD_IF_ABSENT,
                    {**at, "name": path, "value": value.value, "tag": value.tag},
                )
            tx.execute(queries.INSERT_MARK_IF_ABSENT, at)
            tx.execute(queries.DELETE_WAIT, at)
            row.write(tx, now, [event])
            self._wake_after_commit(tx)
            return spi.OperatorOutcome.APPLIED

        return await self._run("answer", work)

    async def end(self, execution_id: str, status: spi.Failed, event: spi.Event) -> spi.OperatorOutcome:
        now = self.clock.now()

        def work(tx: Tx) -> spi.OperatorOutcome:
            row = self._lock_row(tx, execution_id)
            refused = _operator_refusal(row, now, claim_matters=True)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            tx.execute(queries.DELETE_WAITS, {"id": execution_id})
            row.write(tx, now, [event], status=status, executor=None, claim_expiry=None, claim_token=None)
            self._wake_after_commit(tx)
            return spi.OperatorOutcome.APPLIED

        return await self._run("end", work)

    # ------------------------------------------------------------------------------------ reads

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        if self.vendor == "postgresql":
            sql = queries.EXECUTION_WITH_WAITS.text(self.vendor)
            row = await self._run_statement("get_execution", sql, {"id": execution_id})
            if row is None:
                return None
            waits = {path: rows.wake_of(kind, at, name) for path, kind, at, name in _json(row[-1]) or ()}
            return rows.execution_state(row[:-1], waits)

        def work(tx: Tx) -> spi.ExecutionState | None:
            found = self._states_in([execution_id], models.Execution.objects.using(self.using))
            return found[0] if found else None

        return await self._run("get_execution", work)

    def _states_in(self, ids: Sequence[str] | None, queryset: Any) -> list[spi.ExecutionState]:
        if ids is not None:
            queryset = queryset.filter(id__in=ids)
        found = list(queryset.values_list(*queries.EXECUTION_COLUMNS))
        waits: dict[str, dict[str, spi.Wake]] = {}
        if found:
            wait_rows = models.Wait.objects.using(self.using).filter(execution_id__in=[r[0] for r in found])
            for eid, path, kind, at, field_name in wait_rows.values_list(
                "execution_id", "path", "kind", "at", "field_name"
            ):
                waits.setdefault(eid, {})[path] = rows.wake_of(kind, at, field_name)
        return [rows.execution_state(r, waits.get(r[0], {})) for r in found]

    async def list_executions(
        self,
        flow_id: str | None,
        filter: spi.ExecutionFilter.Any | None = None,
        limit: int | None = None,
        offset: int = 0,
        id_prefix: str | None = None,
    ) -> spi.ExecutionPage:
        def work(tx: Tx) -> spi.ExecutionPage:
            queryset = executions_matching(self.using, flow_id, filter, id_prefix)
            total = counted(self.using, flow_id, filter, id_prefix, queryset).count()
            start = max(0, offset)
            stop = start + min(limit, _ALL) if limit is not None and limit >= 0 else None
            if id_prefix and tx.vendor == "postgresql" and total <= FEW_TO_SORT:
                order = _page_of_few(tx, queryset, start, stop)
            else:
                page = queryset.order_by("-created", "-serial")[start:stop]
                order = list(page.values_list("id", flat=True))
            states = {
                s.execution_id: s for s in self._states_in(order, models.Execution.objects.using(self.using))
            }
            return spi.ExecutionPage(items=[states[i] for i in order], total=total)

        return await self._run("list_executions", work)

    async def get_field(self, execution_id: str, name: str, tag: str | None = None) -> spi.FieldData | None:
        def work(tx: Tx) -> spi.FieldData | None:
            found = (
                models.Field.objects.using(self.using)
                .filter(execution_id=execution_id, name=name)
                .values_list("value", "tag")
                .first()
            )
            if found is None or (tag is not None and found[1] != tag):
                return None
            return spi.FieldData(found[0], found[1])

        return await self._run("get_field", work)

    async def get_all_fields(self, execution_id: str) -> Mapping[str, spi.FieldData]:
        def work(tx: Tx) -> Mapping[str, spi.FieldData]:
            found = models.Field.objects.using(self.using).filter(execution_id=execution_id)
            return {n: spi.FieldData(v, t) for n, v, t in found.values_list("name", "value", "tag")}

        return await self._run("get_all_fields", work)

    async def get_history(
        self, execution_id: str, limit: int | None = None, offset: int = 0
    ) -> spi.HistoryPage:
        def work(tx: Tx) -> spi.HistoryPage:
            found = (
                models.Event.objects.using(self.using)
                .filter(execution_id=execution_id)
                .order_by("seq")
                .values_list("flow_id", "seq", "kind", "timestamp", "data")
            )
            start = max(0, offset)
            if limit is None or limit < 0:
                page, has_more = list(found[start:]), False
            else:
                bounded = min(limit, _ALL)
                page = list(found[start : start + bounded + 1])
                has_more = len(page) > bounded
                page = page[:bounded]
            events = [rows.event_of(f, execution_id, s, k, t, d) for f, s, k, t, d in page]
            return spi.HistoryPage(events, has_more)

        return await self._run("get_history", work)

    async def get_workflow(self, workflow_id: str, hash: str | None = None) -> spi.WorkflowInfo | None:
        def work(tx: Tx) -> spi.WorkflowInfo | None:
            versions = models.WorkflowVersion.objects.using(self.using).filter(workflow_id=workflow_id)
            if hash is None:
                latest = models.Workflow.objects.using(self.using).filter(id=workflow_id).first()
                if latest is None:
                    return None
                versions = versions.filter(hash=latest.latest_hash)
            else:
                versions = versions.filter(hash=hash)
            info = versions.values_list("info", flat=True).first()
            return spi.WorkflowInfo.model_validate_json(info) if info is not None else None

        return await self._run("get_workflow", work)

    async def list_workflows(self) -> Sequence[spi.WorkflowInfo]:
        def work(tx: Tx) -> Sequence[spi.WorkflowInfo]:
            latest = models.WorkflowVersion.objects.using(self.using).filter(workflow__latest_hash=F("hash"))
            found = latest.order_by("workflow_id").values_list("info", flat=True)
            return [spi.WorkflowInfo.model_validate_json(i) for i in found]

        return await self._run("list_workflows", work)

    async def list_workflow_versions(self, workflow_id: str) -> Sequence[spi.WorkflowInfo]:
        def work(tx: Tx) -> Sequence[spi.WorkflowInfo]:
            found = (
                models.WorkflowVersion.objects.using(self.using)
                .filter(workflow_id=workflow_id)
                .order_by("id")
                .values_list("info", flat=True)
            )
            return [spi.WorkflowInfo.model_validate_json(i) for i in found]

        return await self._run("list_workflow_versions", work)

    # ---- what a console reads (store/django/feed.py, heartbeats.py, counts.py)

    def now(self) -> datetime:
        return self.clock.now()

    async def events_after(
        self,
        after: int,
        *,
        gaps: Collection[int] = (),
        execution_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = feed.BATCH,
    ) -> Sequence[feed.FeedEvent]:
        scope = {"execution_id": execution_id, "workflow_id": workflow_id}
        work = functools.partial(django_feed.events_after, after=after, gaps=gaps, limit=limit, **scope)
        return await self._run("events_after", work)

    async def latest_event_id(self) -> int:
        return await self._run("latest_event_id", django_feed.latest_event_id)

    async def wait_for_change(self, timeout: timedelta) -> None:
        if self._closed:  # a listener started now would outlive the store
            raise spi.FlowStoreError("wait_for_change: the store is closed")
        self._ensure_listening()  # other processes' writes arrive through the LISTEN connection
        await django_feed.changed(self.hub, self.clock, timeout)

    async def record_heartbeat(self, beat: heartbeats.Heartbeat) -> None:
        work = functools.partial(django_heartbeats.record, beat=beat, now=self.now())
        await self._run("record_heartbeat", work)

    async def list_heartbeats(self, fresh_within: timedelta) -> Sequence[heartbeats.RecordedHeartbeat]:
        since = self.now() - fresh_within
        return await self._run("list_heartbeats", functools.partial(django_heartbeats.listed, since=since))

    async def count_by_status(self, workflow_id: str | None = None) -> Sequence[counts.StatusCount]:
        work = functools.partial(django_counts.by_status, workflow_id=workflow_id)
        return await self._run("count_by_status", work)

    async def count_by_version(self, workflow_id: str) -> Sequence[counts.VersionCount]:
        work = functools.partial(django_counts.by_version, workflow_id=workflow_id)
        return await self._run("count_by_version", work)

    async def failure_kinds(self) -> Sequence[str]:
        return await self._run("failure_kinds", django_counts.failure_kinds)

    async def claims_by_executor(self) -> Sequence[counts.ExecutorClaims]:
        work = functools.partial(django_counts.claims_by_executor, now=self.now())
        return await self._run("claims_by_executor", work)

    async def recent_claimers(self, within: timedelta, scan: int = 5000) -> Sequence[counts.RecentClaimer]:
        work = functools.partial(django_counts.recent_claimers, since=self.now() - within, scan=scan)
        return await self._run("recent_claimers", work)


def _json(value: Any) -> Any:
    """A JSON aggregate as the driver answers it (decoded, or text when Django registered a text loader)."""
    return json.loads(value) if isinstance(value, str) else value


def _creation_params(
    execution_id: str,
    flow_id: str,
    hash: str,
    status: spi.Status,
    event: spi.Event,
    fields: Mapping[str, spi.FieldData] | None,
    now: datetime,
) -> dict[str, Any]:
    """The parameters a creating statement takes: the row, its Created event (`ev0…`), its seed fields
    (`s{i}…`, as `queries.seed_fields` numbers them)."""
    [(event_flow_id, kind, timestamp, data)] = rows.event_values([event])
    params: dict[str, Any] = {
        "id": execution_id,
        "flow_id": flow_id,
        "hash": hash,
        "now": now,
        "ev0f": event_flow_id,
        "ev0k": kind,
        "ev0t": timestamp,
        "ev0d": data,
        **rows.status_columns(status),
    }
    for i, (name, seed) in enumerate((fields or {}).items()):
        params.update({f"s{i}n": name, f"s{i}v": seed.value, f"s{i}t": seed.tag})
    return params


def _undelivered(locked: bool, status: str | None) -> spi.SignalOutcome | None:
    """What a one-statement delivery that delivered nothing answers: already delivered (it locked the row),
    missing or ended (its status says which); None when the row ended only while the statement waited."""
    if locked:
        return spi.AlreadyDelivered()
    if status is None:
        return spi.AlreadyTerminal(spi.Cancelled())
    ended = rows.status_of(status)
    return spi.AlreadyTerminal(ended) if ended.terminal else None


def _claim_of(row: Sequence[Any]) -> _Claim:
    """One row of CLAIM_WITH_LEDGER: the execution's columns, then its waits, fields and history."""
    columns, waits_json, fields_json, events_json = row[:11], row[11], row[12], row[13]
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
    return _Claim(state, frozenset(satisfied), int(columns[6]), (fields, history))


def _page_of_few(tx: Tx, matching: Any, start: int, stop: int | None) -> list[str]:
    """PostgreSQL: a page of a search known to match few executions, taken by sorting the matches.

    Asked for a page in created order, the planner walks the created index down from the newest row and
    filters: cheap when matches are spread over time, but an id prefix often names old executions only,
    and then the walk passes every newer row first (1.6 s for 10,000 matches under 990,000 newer rows).
    Materializing the matches first (the id index's range) and sorting them costs what they number."""
    inner, params = matching.values("id", "created", "serial").query.sql_with_params()
    tx.cursor.execute(
        queries.SORTED_PAGE.text(tx.vendor).format(matching=inner),
        [*params, None if stop is None else stop - start, start],
    )
    return [row[0] for row in tx.cursor.fetchall()]


def counted(
    using: str,
    flow_id: str | None,
    filt: spi.ExecutionFilter.Any | None,
    id_prefix: str | None,
    matching: Any,
) -> Any:
    """What a search counts for its exact total (`.count()` of it). A wait-kind arm counts distinct
    executions among the wait rows (an index-only scan of the rows that wait) instead of probing every
    execution for a row."""
    Arm = spi.ExecutionFilter
    if not isinstance(filt, Arm.Sleeping | Arm.WaitingForInput):
        return matching
    waits = models.Wait.objects.using(using)
    if isinstance(filt, Arm.Sleeping):
        waits = waits.filter(kind=models.Wait.AT)
    else:
        waits = waits.filter(kind=models.Wait.ON_FIELD)
        if filt.name is not None:
            waits = waits.filter(field_name=filt.name)
    if flow_id is not None:
        waits = waits.filter(execution__flow_id=flow_id)
    if id_prefix:
        if connections[using].vendor == "sqlite":
            waits = waits.filter(execution_id__gte=id_prefix, execution_id__lt=id_prefix + "\U0010ffff")
        else:
            waits = waits.filter(execution__id__startswith=id_prefix)
    return waits.values("execution_id").distinct()


def executions_matching(
    using: str, flow_id: str | None, filt: spi.ExecutionFilter.Any | None, id_prefix: str | None
) -> Any:
    """The executions a `list_executions` call selects, unpaged (each arm mirrors `spi.filter_matches`)."""
    queryset = models.Execution.objects.using(using).all()
    if flow_id is not None:
        queryset = queryset.filter(flow_id=flow_id)
    if id_prefix:
        if connections[using].vendor == "sqlite":
            # SQLite's LIKE ignores case; a range on its byte-wise (code point) order does not
            queryset = queryset.filter(id__gte=id_prefix, id__lt=id_prefix + "\U0010ffff")
        else:
            queryset = queryset.filter(id__startswith=id_prefix)
    if filt is None:
        return queryset
    active = ~Q(status_kind__in=models.TERMINAL_KINDS)
    waits = models.Wait.objects.using(using).filter(execution=OuterRef("pk"))
    Arm = spi.ExecutionFilter
    match filt:
        case Arm.Running():
            return queryset.filter(status_kind=models.RUNNING)
        case Arm.Completed():
            return queryset.filter(status_kind=models.COMPLETED)
        case Arm.Cancelled():
            return queryset.filter(status_kind=models.CANCELLED)
        case Arm.Compensating():
            return queryset.filter(status_kind=models.COMPENSATING)
        case Arm.Failed(kind):
            if kind is not None:
                # failure_kind is written for Failed rows only (rows.status_columns), so it selects them
                # alone, and its partial index then counts them without visiting the table
                return queryset.filter(failure_kind=kind)
            return queryset.filter(status_kind=models.FAILED)
        case Arm.Sleeping():
            return queryset.filter(Exists(waits.filter(kind=models.Wait.AT)))
        case Arm.WaitingForInput(name):
            on_field = waits.filter(kind=models.Wait.ON_FIELD)
            return queryset.filter(Exists(on_field if name is None else on_field.filter(field_name=name)))
        case Arm.Cancelling():
            return queryset.filter(Q(cancel_requested=True) & active)
        case Arm.Orphaned(served_hashes):
            return queryset.filter(active & ~Q(hash__in=sorted(served_hashes)))
        case Arm.Stopped(code):
            queryset = queryset.filter(status_kind=models.STOPPED)
            return queryset if code is None else queryset.filter(stop_code=code)
    raise TypeError(f"not a filter: {filt!r}")


@dataclass
class _Locked:
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
    def read(cls, tx: Tx, execution_id: str) -> _Locked | None:
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
            last_seq=int(found[12]),
        )

    def claim_live(self, now: datetime) -> bool:
        return self.claim_token is not None and self.claim_expiry is not None and now < self.claim_expiry

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


def _operator_refusal(
    row: _Locked | None, now: datetime, *, claim_matters: bool
) -> spi.OperatorOutcome | None:
    if row is None:
        return spi.OperatorOutcome.NOT_FOUND
    if row.status.terminal:
        return spi.OperatorOutcome.ALREADY_TERMINAL
    if claim_matters and row.claim_live(now):
        return spi.OperatorOutcome.CLAIM_HELD
    return None


def _lifted(status: spi.Status) -> spi.Status:
    """Where a stop goes when lifted: back to running, or back into the unwind it stopped inside."""
    if isinstance(status, spi.Stopped) and status.cause is not None:
        return spi.Compensating(status.cause)
    return spi.Running()


class _DjangoClaimed(HeldClaim):
    """A claim handle. Each write is one transaction opened by an UPDATE that carries the acceptance rule
    and answers the cancel flag; a refused write rolls back, changing nothing."""

    def __init__(
        self,
        store: DjangoStore,
        state: spi.ExecutionState,
        satisfied: frozenset[str],
        token: int,
        ledger: tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None = None,
    ) -> None:
        super().__init__(state, satisfied, token)
        self._store = store
        self._ledger = ledger

    async def prefetched_ledger(self) -> tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None:
        return self._ledger

    @property
    def _id(self) -> str:
        return self._state.execution_id

    def _key(self, now: datetime) -> dict[str, Any]:
        return {"id": self._id, "token": self._token, "now": now}

    def _accept(
        self,
        tx: Tx,
        now: datetime,
        events: Sequence[spi.Event],
        query: queries.Query = queries.ACCEPT_WRITE,
        **extra: Any,
    ) -> _Opened | None:
        """Open the write under the acceptance rule, reserving the seqs of `events`; None: claim lost."""
        found = tx.one(query, {**self._key(now), "events": len(events), **extra})
        if found is None:
            return None
        cancel, reason, last_seq = found
        return _Opened((bool(cancel), reason or ""), last_seq - len(events) + 1, events)

    async def _in_one_statement(
        self,
        operation: str,
        events: Sequence[spi.Event],
        params: Mapping[str, Any] | None = None,
        **shape: Any,
    ) -> bool | None:
        """PostgreSQL: the write as one statement (`queries.claimed_write`). None: claim lost; False: the
        write-once gate or `unless_cancelled` refused (nothing written); True: applied. Whenever the claim
        held, the cancel flag is refreshed from the row."""
        now = self._store.clock.now()
        values: dict[str, Any] = {**self._key(now), "origin": self._store.origin, **(params or {})}
        for i, (flow_id, kind, timestamp, data) in enumerate(rows.event_values(events)):
            values.update({f"ev{i}f": flow_id, f"ev{i}k": kind, f"ev{i}t": timestamp, f"ev{i}d": data})
        sql = queries.claimed_write(events=len(events), **shape)
        found = await self._store._run_statement(operation, sql, values)
        if found is None:
            return None
        went, cancel, reason = found[:3]
        self.heard_cancel(cancel, reason)
        if not went:
            return False
        if shape.get("notify") and found[3]:
            self._store.hub.changed()
        return True

    @property
    def _one_statement(self) -> bool:
        return self._store.vendor == "postgresql"

    async def _write(
        self, operation: str, work: Callable[[Tx, datetime], tuple[T, tuple[bool, str] | None]]
    ) -> T:
        now = self._store.clock.now()
        outcome, cancel = await self._store._run(operation, lambda tx: work(tx, now))
        if cancel is not None:
            self.heard_cancel(*cancel)
        return outcome

    async def append_event(
        self, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        if self._one_statement:
            done = await self._in_one_statement("append_event", [*preceding, event])
            return spi.WriteOutcome.CLAIM_LOST if done is None else spi.WriteOutcome.APPLIED

        def work(tx: Tx, now: datetime) -> tuple[spi.WriteOutcome, tuple[bool, str] | None]:
            opened = self._accept(tx, now, [*preceding, event])
            if opened is None:
                return spi.WriteOutcome.CLAIM_LOST, None
            tx.insert_events(self._id, opened.first_seq, opened.events)
            return spi.WriteOutcome.APPLIED, opened.cancel

        return await self._write("append_event", work)

    async def record_wait(
        self, path: str, wake: spi.Wake, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        if self._one_statement:
            wait = {"path": path, **rows.wait_columns(wake)}
            done = await self._in_one_statement("record_wait", [*preceding, event], wait, insert_wait=True)
            return spi.WriteOutcome.CLAIM_LOST if done is None else spi.WriteOutcome.APPLIED

        def work(tx: Tx, now: datetime) -> tuple[spi.WriteOutcome, tuple[bool, str] | None]:
            opened = self._accept(tx, now, [*preceding, event])
            if opened is None:
                return spi.WriteOutcome.CLAIM_LOST, None
            tx.execute(
                queries.INSERT_WAIT_IF_ABSENT, {"id": self._id, "path": path, **rows.wait_columns(wake)}
            )
            tx.insert_events(self._id, opened.first_seq, opened.events)
            return spi.WriteOutcome.APPLIED, opened.cancel

        return await self._write("record_wait", work)

    async def renew_claim(self, lease: timedelta) -> bool:
        if self._one_statement:
            now = self._store.clock.now()
            sql = queries.RENEW_CLAIM.text("postgresql")
            found = await self._store._run_statement(
                "renew_claim", sql, {**self._key(now), "expiry": now + lease}
            )
            if found is None:
                return False
            self.heard_cancel(found[0], found[1])
            return True

        def work(tx: Tx, now: datetime) -> tuple[bool, tuple[bool, str] | None]:
            found = tx.one(queries.RENEW_CLAIM, {**self._key(now), "expiry": now + lease})
            if found is None:
                return False, None
            return True, (bool(found[0]), found[1] or "")

        return await self._write("renew_claim", work)

    async def update_status(
        self, status: spi.Status, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        def work(tx: Tx, now: datetime) -> tuple[spi.StatusOutcome, tuple[bool, str] | None]:
            if status.terminal:
                return self._refused(tx, now), None
            events = [*preceding, event]
            opened = self._accept(tx, now, events, queries.ACCEPT_STATUS, **rows.status_columns(status))
            if opened is None:
                return spi.StatusOutcome.CLAIM_LOST, None
            tx.insert_events(self._id, opened.first_seq, opened.events)
            return spi.StatusOutcome.APPLIED, opened.cancel

        return await self._write("update_status", work)

    def _not_completed(self, tx: Tx, now: datetime) -> tuple[spi.StatusOutcome, tuple[bool, str] | None]:
        """Why ACCEPT_COMPLETION wrote nothing: the claim is gone, or a cancel request is outstanding."""
        found = tx.one(queries.CLAIM_STATE, self._key(now))
        if found is None:
            return spi.StatusOutcome.CLAIM_LOST, None
        return spi.StatusOutcome.CANCEL_REQUESTED, (bool(found[0]), found[1] or "")

    def _refused(self, tx: Tx, now: datetime) -> spi.StatusOutcome:
        """A write refused for its own sake still says claim-lost first when the claim is gone."""
        if tx.one(queries.CLAIM_HOLDS, self._key(now)) is None:
            return spi.StatusOutcome.CLAIM_LOST
        return spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL

    async def record_progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        preceding: Sequence[spi.Event] = (),
        extra_fields: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        if self._one_statement:
            params: dict[str, Any] = {"path": path}
            if value is not None:
                params.update(value=value.value, tag=value.tag)
            for i, (name, extra) in enumerate((extra_fields or {}).items()):
                params.update({f"x{i}n": name, f"x{i}v": extra.value, f"x{i}t": extra.tag})
            done = await self._in_one_statement(
                "record_progress",
                [*preceding, event],
                params,
                gate="field" if value is not None else "mark",
                extra_fields=len(extra_fields or {}),
                delete_waits="path",
                clear_cancel=clear_cancel,
            )
            if done is None:
                return spi.ProgressOutcome.CLAIM_LOST
            return spi.ProgressOutcome.RECORDED if done else spi.ProgressOutcome.ALREADY_RECORDED

        def work(tx: Tx, now: datetime) -> tuple[spi.ProgressOutcome, tuple[bool, str] | None]:
            opened = self._accept(tx, now, [*preceding, event])
            if opened is None:
                return spi.ProgressOutcome.CLAIM_LOST, None
            at = {"id": self._id, "path": path}
            if value is not None:
                wrote = tx.one(
                    queries.INSERT_FIELD_IF_ABSENT,
                    {**at, "name": path, "value": value.value, "tag": value.tag},
                )
            else:
                wrote = tx.one(queries.INSERT_MARK_IF_ABSENT, at)
            if wrote is None:
                tx.rollback()
                return spi.ProgressOutcome.ALREADY_RECORDED, None
            for name, extra in (extra_fields or {}).items():
                tx.execute(
                    queries.INSERT_FIELD_IF_ABSENT,
                    {"id": self._id, "name": name, "value": extra.value, "tag": extra.tag},
                )
                tx.cursor.fetchall()
            tx.execute(queries.DELETE_WAIT, at)
            if clear_cancel:
                tx.execute(queries.CLEAR_CANCEL, {"id": self._id})
                opened = _Opened((False, ""), opened.first_seq, opened.events)
            tx.insert_events(self._id, opened.first_seq, opened.events)
            return spi.ProgressOutcome.RECORDED, opened.cancel

        return await self._write("record_progress", work)

    async def finish(
        self, outcome: spi.ClaimOutcome, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        if self._one_statement:
            done = await self._finish_in_one_statement(outcome, preceding)
            if done is not None:
                return done

        def work(tx: Tx, now: datetime) -> tuple[spi.StatusOutcome, tuple[bool, str] | None]:
            return self._finish_in(tx, outcome, preceding, now)

        return await self._write("finish", work)

    async def _finish_in_one_statement(
        self, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event]
    ) -> spi.StatusOutcome | None:
        """PostgreSQL's one-statement ending; None for a refusal that the transactional path answers."""
        match outcome:
            case spi.Terminal(status, event) if status.terminal:
                completing = isinstance(status, spi.Completed)
                done = await self._in_one_statement(
                    "finish",
                    [*preceding, event],
                    rows.status_columns(status),
                    set_status=True,
                    release=True,
                    delete_waits="all",
                    unless_cancelled=completing,
                )
                if done is False:  # a Completed ending refused by the cancel request on the locked row
                    return spi.StatusOutcome.CANCEL_REQUESTED
            case spi.Suspended(waiting_on):
                keep = sorted(waiting_on)
                done = await self._in_one_statement(
                    "finish",
                    preceding,
                    {f"keep{i}": path for i, path in enumerate(keep)},
                    release=True,
                    delete_waits="except",
                    keep=len(keep),
                    notify=True,
                )
            case spi.Stop(status, event) if isinstance(status, spi.Stopped):
                done = await self._in_one_statement(
                    "finish",
                    [*preceding, event],
                    rows.status_columns(status),
                    set_status=True,
                    release=True,
                    delete_waits="all",
                )
            case _:
                return None
        return spi.StatusOutcome.CLAIM_LOST if done is None else spi.StatusOutcome.APPLIED

    def _finish_in(
        self, tx: Tx, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event], now: datetime
    ) -> tuple[spi.StatusOutcome, tuple[bool, str] | None]:
        key = {"id": self._id}
        match outcome:
            case spi.Terminal(status, event):
                if not status.terminal:
                    return self._refused(tx, now), None
                events = [*preceding, event]
                completing = isinstance(status, spi.Completed)
                query = queries.ACCEPT_COMPLETION if completing else queries.ACCEPT_RELEASE_STATUS
                opened = self._accept(tx, now, events, query, **rows.status_columns(status))
                if opened is None:
                    return (
                        self._not_completed(tx, now) if completing else (spi.StatusOutcome.CLAIM_LOST, None)
                    )
                tx.execute(queries.DELETE_WAITS, key)
            case spi.Suspended(waiting_on):
                opened = self._accept(tx, now, preceding, queries.ACCEPT_RELEASE)
                if opened is None:
                    return spi.StatusOutcome.CLAIM_LOST, None
                if waiting_on:
                    params: dict[str, Any] = dict(key)
                    keep = queries.in_list("keep", sorted(waiting_on), params)
                    tx.execute(queries.DELETE_WAITS_EXCEPT, params, keep=keep)
                else:
                    tx.execute(queries.DELETE_WAITS, key)
                self._store._wake_after_commit(tx)
            case spi.Stop(status, event):
                if not isinstance(status, spi.Stopped):
                    return self._refused(tx, now), None
                events = [*preceding, event]
                opened = self._accept(
                    tx, now, events, queries.ACCEPT_RELEASE_STATUS, **rows.status_columns(status)
                )
                if opened is None:
                    return spi.StatusOutcome.CLAIM_LOST, None
                tx.execute(queries.DELETE_WAITS, key)
            case _:
                raise TypeError(f"not a claim outcome: {outcome!r}")
        tx.insert_events(self._id, opened.first_seq, opened.events)
        return spi.StatusOutcome.APPLIED, opened.cancel
