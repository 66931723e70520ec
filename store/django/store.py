"""`DjangoStore`: the FlowStore on a Django database (PostgreSQL in production, SQLite embedded).

Every SPI call that is not on the hot path is one `transaction.atomic` run on a dedicated thread pool
(Django connections are per thread, so N threads hold N connections); the event loop never blocks on the
database. The hot operations (claims, starts, signals, every write under a claim, the read of one
execution) go through the writer seam chosen once here (`store/django/writes.py`): on PostgreSQL single
statements sent from the event loop and committed together by group commit (`store/django/postgres.py`),
on SQLite transactions under its write lock (`store/django/sqlite.py`). Every time the store judges
(lease expiry, sleep deadlines) comes from the injected clock and is passed into SQL, so a `ManualClock`
drives the store exactly as it drives the memory store.

Blocked `claim_ready` callers wait on a `WakeHub`: writes that can make a row ready wake them directly
(after commit) and, on PostgreSQL, NOTIFY the other processes, whose listener wakes theirs. A caller also
wakes on its own at the earliest sleep deadline or lease expiry among the rows it serves, and asks once
more at its deadline. SQLite callers watch `PRAGMA data_version` every 25 ms for other processes' commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import connections, transaction
from django.db.models import F

from flowdeck.store import claim_order, feed, field_terms, heartbeats, rules, spi
from flowdeck.store.clock import SYSTEM_CLOCK, Clock
from flowdeck.store.django import concurrency as django_concurrency
from flowdeck.store.django import feed as django_feed
from flowdeck.store.django import heartbeats as django_heartbeats
from flowdeck.store.django import models, operator_writes, queries, rows, search, sqlite_connection
from flowdeck.store.django.claimed import DjangoClaimed
from flowdeck.store.django.console_reads import ConsoleReads
from flowdeck.store.django.errors import is_shared_cache_lock, translated
from flowdeck.store.django.pooling import DIRECT, Pooling
from flowdeck.store.django.postgres import PostgresWrites
from flowdeck.store.django.rate_limits import RateLimitStore
from flowdeck.store.django.retention_writes import RetentionWrites
from flowdeck.store.django.schedules import ScheduleStore
from flowdeck.store.django.search import FEW_TO_SORT, counted, executions_matching
from flowdeck.store.django.sqlite import WATCH_INTERVAL as SQLITE_WATCH_INTERVAL
from flowdeck.store.django.sqlite import SqliteWrites
from flowdeck.store.django.tx import Locked, Tx
from flowdeck.store.django.writes import Ask, Writes, creation_params
from flowdeck.store.wake_hub import Asked, WakeHub, poll, wait_for_change

# `counted`, `executions_matching`, `FEW_TO_SORT` (store/django/search.py) and `SQLITE_WATCH_INTERVAL`
# (store/django/sqlite.py) are re-exported from here, where tests and tools first found them.
__all__ = ["FEW_TO_SORT", "SQLITE_WATCH_INTERVAL", "DjangoStore", "counted", "executions_matching"]

T = TypeVar("T")

# How long, in all, an operation waits out another connection's lock on a shared-cache SQLite database
# (the in-memory one tests use), which SQLite's own busy timeout does not cover.
LOCKED_PATIENCE = 5.0


class DjangoStore(
    ConsoleReads,
    RetentionWrites,
    ScheduleStore,
    django_concurrency.ConcurrencyReads,
    RateLimitStore,
    spi.FlowStore,
):
    """A `FlowStore` on the Django database alias `using`.

    `pool_size` is the number of threads (hence connections) serving it on PostgreSQL (default 8); SQLite
    always gets one (it serializes writers anyway, and the cross-process watch needs one connection).
    `write_connections` (PostgreSQL) is the number of async connections per event loop that carry the
    one-statement writes, claims and reads (`group_commit.GroupCommit`; default 2: one batch in flight
    while the next gathers). `listen` (PostgreSQL) starts the LISTEN connection at the first blocking
    `claim_ready`. `pooling` (PostgreSQL): whether the alias goes through a transaction-mode pooler, and
    the aliases the LISTEN connection and the writers use (`store/django/pooling.py`). `replica`: `using`
    is a streaming replica, read only (`store/django/replica.py`). Call `close()` (or `await aclose()`)
    when done.
    """

    def __init__(
        self,
        using: str = "default",
        clock: Clock = SYSTEM_CLOCK,
        *,
        pool_size: int | None = None,
        listen: bool = True,
        write_connections: int = 2,
        pooling: Pooling = DIRECT,
        replica: bool = False,
    ) -> None:
        self.using = using
        self.replica = replica
        self.clock = clock
        self.vendor: str = connections[using].vendor
        self.hub = WakeHub()
        # names this store's NOTIFYs, so its own listener skips what its callers already heard
        self.origin = uuid.uuid4().hex
        self._closed = False
        self._fair_share = claim_order.FairShare()
        # which served versions declare concurrency limits (store/django/concurrency.py), judged once each
        self._limited: dict[tuple[str, str], bool] = {}
        # The one choice of database: every hot operation goes through `_writes` from here on.
        self._writes: Writes
        if self.vendor == "postgresql":
            self.pool_size = pool_size or 8
            pooling.check(listen=listen)
            self._writes = PostgresWrites(self, listen=listen, connections=write_connections, pooling=pooling)
        elif self.vendor == "sqlite":
            # Always one connection. SQLite's writers are serialized anyway, and the cross-process watch
            # compares `PRAGMA data_version` readings, which only mean something on one connection.
            self.pool_size = 1
            sqlite_connection.check_folder(using)  # WAL, busy timeout, IMMEDIATE: sqlite_connection.py
            self._writes = SqliteWrites(self)
        else:
            raise ValueError(f"DjangoStore serves PostgreSQL and SQLite, not {self.vendor!r}")
        self._pool = ThreadPoolExecutor(
            self.pool_size, f"flowdeck-store-{using}", initializer=sqlite_connection.mark_thread
        )

    # ------------------------------------------------------------------------------------ plumbing

    async def _run(self, operation: str, work: Callable[[Tx], T]) -> T:
        """`work` as one transaction on the store's threads."""
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
        """`work` as one transaction; on SQLite one that met a shared-cache lock (rolled back, so nothing
        of it landed) is run again after a pause, up to `LOCKED_PATIENCE` seconds in all."""
        waited = 0.0
        pause = 0.001
        while True:
            try:
                return self._once(operation, work)
            except spi.FlowStoreError as error:
                if waited >= LOCKED_PATIENCE or connections[self.using].in_atomic_block:
                    raise
                if not is_shared_cache_lock(error):
                    raise
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, 0.05)

    def _once(self, operation: str, work: Callable[[Tx], T]) -> T:
        with translated(operation, self.using), transaction.atomic(using=self.using):
            connection = connections[self.using]
            with connection.cursor() as cursor:
                return work(Tx(cursor, connection, read_only=self.replica))

    def _lock_row(self, tx: Tx, execution_id: str) -> Locked | None:
        """Read and lock a row for a decision made in Python. A claim running meanwhile skips a locked row
        (SKIP LOCKED) even when it was ready, and a refusal writes nothing that would wake it again: so
        every lock wakes pollers at commit (on PostgreSQL one NOTIFY per transaction, deduplicated)."""
        row = Locked.read(tx, execution_id)
        if row is not None:
            self._wake_after_commit(tx)
        return row

    async def replica_lag(self) -> float:
        """Seconds this store's database replays behind its primary (0: caught up, or not a replica)."""
        row = await self._run("replica lag", lambda tx: tx.one(queries.REPLICA_LAG))
        return float(row[0] or 0)

    def _wake_after_commit(self, tx: Tx, *, registration: bool = False) -> None:
        """This write can make a row ready: wake local callers at commit, tell the other processes."""
        self._writes.notify(tx, registration=registration)
        transaction.on_commit(lambda: self.hub.changed(registration=registration), using=self.using)

    def close(self) -> None:
        """Stop the listener, close this store's connections and its threads."""
        if self._closed:
            return
        self._closed = True
        self.hub.changed()  # blocked callers ask again and learn that the store is closed
        self._writes.close()
        barrier = threading.Barrier(self.pool_size, timeout=2)

        def close_connection() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()  # one task per thread, so every thread closes its own connection
            connections[self.using].close()

        for _ in range(self.pool_size):
            self._pool.submit(close_connection)
        self._pool.shutdown(wait=True)

    async def aclose(self) -> None:
        await self._writes.aclose()
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def reset(self) -> None:
        """Tests: empty every table (blocking). The token source keeps counting."""

        def work(tx: Tx) -> None:
            for statement in queries.EMPTY_ALL.text(tx.vendor).split(";"):
                tx.cursor.execute(statement)

        self._pool.submit(self._in_transaction, "reset", work).result()

    # ------------------------------------------------------------------------------------ claiming

    async def claim_ready(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        lease: timedelta,
        limit: int,
        timeout: timedelta,
    ) -> Sequence[spi.Claimed]:
        if timeout > timedelta(0):
            await self._writes.start_listening()

        async def ask() -> Asked[spi.Claimed]:
            asked = await self._ask(served, executor_id, lease, limit)
            alarm = (asked.next_wake - asked.now).total_seconds() if asked.next_wake is not None else None
            return self._handles(asked), alarm, self._writes.commits_elsewhere(asked)

        return await poll(self.hub, self.clock, timeout, ask)

    def _handles(self, ask: Ask) -> list[spi.Claimed]:
        return [DjangoClaimed(self, c.state, c.satisfied, c.token, c.ledger) for c in ask.claims]

    async def _ask(
        self, served: frozenset[tuple[str, str]], executor_id: str, lease: timedelta, limit: int
    ) -> Ask:
        now = self.clock.now()  # the one wall-clock read of an ask
        if self._closed:
            raise spi.FlowStoreError("claim_ready: the store is closed")
        try:
            order = queries.CLAIM_ORDER[self._fair_share.oldest_first()]
            if any(self._limited.get(pair, True) for pair in served):  # some limited, or not judged yet
                asking = django_concurrency.ask(self, served, executor_id, now + lease, limit, now, order)
                work = asyncio.ensure_future(asking)
            else:
                work = self._writes.claim(served, executor_id, now + lease, limit, now, order)
        except RuntimeError as error:
            raise spi.FlowStoreError("claim_ready: the store is closed") from error
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            # The claim may commit after the caller stopped waiting: hand its rows straight back.
            work.add_done_callback(self._give_back)
            raise

    def _give_back(self, work: asyncio.Future[Ask]) -> None:
        if work.cancelled() or work.exception() is not None:
            return
        for claim in work.result().claims:
            handle = DjangoClaimed(self, claim.state, claim.satisfied, claim.token)
            if self._closed:
                return  # the lease will lapse instead
            self._pool.submit(
                self._in_transaction,
                "give back",
                lambda tx, h=handle: h._finish_in(
                    tx, spi.Suspended(frozenset(h.state.waits)), (), self.clock.now()
                ),
            )

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
        return await self._writes.create(execution_id, flow_id, hash, status, event, fields, now)

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
        following: Sequence[spi.Event] = (),
    ) -> spi.Claimed | None:
        # Wakes no poller, here or elsewhere: the row is nobody else's until its lease lapses, and then a
        # poll finds it as any lapsed claim (NEXT_WAKE counts its expiry among a caller's wake-ups).
        now = self.clock.now()
        params = creation_params(execution_id, flow_id, hash, status, event, fields, now, following)
        params.update(executor=executor_id, expiry=now + lease)
        opening = [event, *following]
        found = await self._writes.create_claimed(params, fields, opening)
        if found is None:
            return None
        ledger = (dict(fields or {}), [e.with_seq(seq) for seq, e in enumerate(opening, 1)])
        return DjangoClaimed(self, rows.execution_state(found, {}), frozenset(), int(found[6]), ledger)

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        return await self._writes.signal(execution_id, name, value, event, self.clock.now())

    async def _signal_in_transaction(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome:
        """`signal` as one transaction (SQLite's way; PostgreSQL's when its statement cannot tell)."""

        work = functools.partial(
            self._signal_in, execution_id=execution_id, name=name, value=value, event=event, now=now
        )
        return await self._run("signal", work)

    def _signal_in(
        self, tx: Tx, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome:
        """The delivery in `tx`, waking pollers at its commit when it delivered."""
        outcome = self._deliver_in(tx, execution_id, name, value, event, now)
        if isinstance(outcome, spi.Delivered):
            self._wake_after_commit(tx)
        return outcome

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
        outcome, found = await self._writes.signal_and_claim(
            execution_id, name, value, event, now, executor_id, now + lease
        )
        if found is None:
            return outcome, None
        return outcome, DjangoClaimed(self, found.state, found.satisfied, found.token, found.ledger)

    async def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> spi.CancelOutcome:
        now = self.clock.now()
        work = functools.partial(
            self._request_cancel_in, execution_id=execution_id, reason=reason, actor=actor, now=now
        )
        return await self._run("request_cancel", work)

    def _request_cancel_in(
        self, tx: Tx, execution_id: str, reason: str, actor: str | None, now: datetime
    ) -> spi.CancelOutcome:
        """The cancel request in `tx`: refused, or written with its event and a wake at commit."""
        row = self._lock_row(tx, execution_id)
        refused = rules.cancel_refusal(row)
        if refused is not None or row is None:
            return refused or spi.AlreadyTerminal(spi.Cancelled())
        write = rules.cancel_write(row, execution_id, reason, actor, now)
        row.write(
            tx, now, [write.event], status=write.status, cancel_requested=True, cancel_reason=write.reason
        )
        self._wake_after_commit(tx)
        return write.answer

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
        self._limited[(info.id, info.structural_hash)] = bool(django_concurrency.limited_versions(info))

    # ---- operator writes

    async def resume(self, execution_id: str, hash: str, event: spi.Event) -> spi.OperatorOutcome:
        work = functools.partial(
            operator_writes.resume_in,
            self,
            execution_id=execution_id,
            hash=hash,
            event=event,
            now=self.clock.now(),
        )
        return await self._run("resume", work)

    async def answer(
        self, execution_id: str, path: str, value: spi.FieldData | None, event: spi.Event
    ) -> spi.OperatorOutcome:
        work = functools.partial(
            operator_writes.answer_in,
            self,
            execution_id=execution_id,
            path=path,
            value=value,
            event=event,
            now=self.clock.now(),
        )
        return await self._run("answer", work)

    async def end(self, execution_id: str, status: spi.Failed, event: spi.Event) -> spi.OperatorOutcome:
        work = functools.partial(
            operator_writes.end_in,
            self,
            execution_id=execution_id,
            status=status,
            event=event,
            now=self.clock.now(),
        )
        return await self._run("end", work)

    # ------------------------------------------------------------------------------------ reads

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        return await self._writes.get_execution(execution_id)

    async def list_executions(
        self,
        flow_id: str | None,
        filter: spi.ExecutionFilter.Any | None = None,
        limit: int | None = None,
        offset: int = 0,
        id_prefix: str | None = None,
        fields: Sequence[field_terms.SearchTerm] = (),
        *,
        order_by: str = "created",
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
    ) -> spi.ExecutionPage:
        where = search.Where(
            flow_id,
            filter,
            id_prefix,
            tuple(fields),
            created_after,
            created_before,
            updated_after,
            updated_before,
        )
        column = spi.check_order(order_by)

        def work(tx: Tx) -> spi.ExecutionPage:
            return search.execution_page(tx, self.using, where, limit, offset, column)

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
        work = functools.partial(search.history_page, execution_id=execution_id, limit=limit, offset=offset)
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
        with_data: bool = False,
    ) -> Sequence[feed.FeedEvent]:
        scope = {"execution_id": execution_id, "workflow_id": workflow_id, "with_data": with_data}
        work = functools.partial(django_feed.events_after, after=after, gaps=gaps, limit=limit, **scope)
        return await self._run("events_after", work)

    async def event_ids_after(
        self, after: int, *, gaps: Collection[int] = (), limit: int = feed.BATCH
    ) -> Sequence[int]:
        work = functools.partial(django_feed.event_ids_after, after=after, gaps=gaps, limit=limit)
        return await self._run("event_ids_after", work)

    async def latest_event_id(self) -> int:
        return await self._run("latest_event_id", django_feed.latest_event_id)

    async def wait_for_change(self, timeout: timedelta) -> None:
        if self._closed:  # a listener started now would outlive the store
            raise spi.FlowStoreError("wait_for_change: the store is closed")
        await self._writes.start_listening()  # other processes' writes arrive through the LISTEN connection
        hub = self.hub
        await wait_for_change(hub, self.clock, hub.generation, hub.registrations, timeout.total_seconds())

    async def record_heartbeat(self, beat: heartbeats.Heartbeat) -> None:
        work = functools.partial(django_heartbeats.record, beat=beat, now=self.now())
        await self._run("record_heartbeat", work)
