"""Group commit: the PostgreSQL store's one-statement operations, committed together when they come together.

Every write under a claim (and every start, signal and renewal) is one statement in autocommit
(`verb_queries.claimed_write` and friends), and so are the claim and the read of one execution. Sent one by
one from the store's threads, each cost two thread hops, a round trip and a commit (a WAL flush on the
server).
Here they go out from the event loop itself over a few async connections. When the writer is idle, a
statement goes at once, sent by its caller. When it is busy, statements queue, and a connection that comes
free takes everything queued: one goes alone, in autocommit; several go as ONE transaction in pipeline
mode, one round trip and one commit for all of them.

Why that keeps each write's meaning. Each statement judges its own claim (token and expiry) and answers
its own row; one refused write (a lost claim, a write-once gate) answers "no row" without an error and
without affecting the others. The batch is ordered by execution id, and every statement locks at most its
own execution's row, so two batches in flight lock rows in the same order and cannot deadlock each other.
A batch that fails anyway (a statement error aborts the whole transaction) is retried one write at a
time in autocommit, so each error reaches the write that caused it and the others still land.

A statement is answered only once its transaction committed: an execution's next node never begins before
its last one is durable, whichever transaction carried it.

One `GroupCommit` serves one event loop: async connections belong to the loop that opened them. `aclose`
closes them; a writer whose loop ended without it closes them when it is collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.pq import ExecStatus, TransactionStatus

from flowdeck.store import spi
from flowdeck.store.django.errors import is_retryable

__all__ = ["GroupCommit"]

log = logging.getLogger(__name__)

# A batch's size bound: enough for every attempt slot of a busy worker, small enough to keep a batch's
# row locks short.
MAX_BATCH = 64


@dataclass
class _Write:
    operation: str
    sql: str
    params: Mapping[str, Any]
    all_rows: bool = False
    prepare: bool = True
    answer: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def order(self) -> str:
        return str(self.params.get("id", ""))


class GroupCommit:
    """Sends statements for one event loop over `connections` async connections (see the module doc)."""

    def __init__(
        self,
        connect_params: Mapping[str, Any],
        connections: int = 2,
        *,
        prepared: bool = True,
        startup_options: bool = True,
    ) -> None:
        self._params = dict(connect_params)
        # The writes find their rows by primary key, and psycopg prepares them (at their first run, see
        # _acquire): a generic plan then skips planning, which costs more than executing them (0.6 of a
        # 1 ms write). PostgreSQL's "auto" mode kept re-planning them as custom plans. A statement that
        # scans (a claim) is sent with prepare=False, so it is planned for its values every time.
        # `prepared=False` (through a transaction-mode pool, store/django/pooling.py): a prepared statement
        # lives in one server session and the next transaction may run in another; every statement then
        # goes unnamed and is planned for its values. `startup_options=False` (through any pooler:
        # PgBouncer refuses the startup parameter) sets the plan cache mode with a SET once connected,
        # which a session-mode pool keeps for the connection's life.
        self._prepare_threshold: int | None = 0 if prepared else None
        self._set_plan_cache = prepared and not startup_options
        if prepared and startup_options:
            options = f"{self._params.get('options', '')} -c plan_cache_mode=force_generic_plan"
            self._params["options"] = options.strip()
        # Not an asyncio.Queue: a task blocked in Queue.get that is collected with its loop closed raises
        # from Queue's own cleanup. Here an idle sender waits on a bare future nobody touches afterwards.
        self._pending: deque[_Write] = deque()
        self._idle: deque[asyncio.Future[None]] = deque()
        # Connections belong to no sender: a sender takes one for a batch, and a caller finding the writer
        # idle sends its statement itself (no hop through a sender task).
        self._size = connections
        self._free: list[psycopg.AsyncConnection[Any]] = []
        self._waiting_for_connection: deque[asyncio.Future[psycopg.AsyncConnection[Any] | None]] = deque()
        self._opened = 0
        self._senders = [
            asyncio.get_running_loop().create_task(self._send(), name=f"flowdeck:group-commit:{i}")
            for i in range(connections)
        ]
        self._open: set[psycopg.AsyncConnection[Any]] = set()
        # A loop may end without cancelling our senders (their `finally` never runs) and a store may never
        # be closed: the sockets still close when this writer is collected.
        weakref.finalize(self, _finish, self._open)
        # what went out: writes answered, and the transactions they took (alone or together, failed ones too)
        self.writes = 0
        self.transactions = 0

    async def run(
        self,
        operation: str,
        sql: str,
        params: Mapping[str, Any],
        *,
        all_rows: bool = False,
        prepare: bool = True,
    ) -> Any:
        """Run one statement, committed by the time this answers; its first row (None: no row), or with
        `all_rows` the list of its rows.

        `prepare=False` for a statement whose best plan depends on its parameters' values (a claim's
        LIMIT over many rows): it is never prepared, so never planned generically (see __init__)."""
        write = _Write(operation, sql, params, all_rows, prepare)
        # Idle (nothing queued, no connection busy): go at once, on this task. Busy: queue, so the writes
        # arriving meanwhile share the next batch (going alone whenever one connection is free made W1
        # take 20 % more transactions and lose throughput).
        if not self._pending and self._free and len(self._free) == self._opened:
            return await self._alone_here(self._free.pop(), write)
        self._pending.append(write)
        while self._idle:
            waiter = self._idle.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break
        return await write.answer

    async def aclose(self) -> None:
        for sender in self._senders:
            sender.cancel()
        await asyncio.gather(*self._senders, return_exceptions=True)
        closed = spi.FlowStoreError("the store is closed")
        while self._pending:
            _fail(self._pending.popleft(), closed)
        _finish(self._open)
        self._free.clear()

    def stop_soon(self) -> None:
        """From another thread: cancel the senders on their loop (if it still runs) and close the sockets."""
        loop = self._senders[0].get_loop()
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.aclose()))
        self.abandon()

    def abandon(self) -> None:
        """Close the sockets without the loop (it may be gone): for a store closed from another thread."""
        _finish(self._open)

    # ---------------------------------------------------------------------------------- connections

    async def _acquire(self) -> psycopg.AsyncConnection[Any]:
        """A free connection, a new one while fewer than `connections` are open, else the next released."""
        while True:
            if self._free:
                return self._free.pop()
            if self._opened < self._size:
                self._opened += 1
                try:
                    # prepare_threshold 0: the statements here are a fixed set of shapes, run over and
                    # over; preparing each at its first run spares a fresh process five plannings each
                    conn = await psycopg.AsyncConnection.connect(
                        **self._params, autocommit=True, prepare_threshold=self._prepare_threshold
                    )
                    if self._set_plan_cache:
                        await conn.execute("SET plan_cache_mode = force_generic_plan", prepare=False)
                except BaseException:
                    self._release(None)
                    raise
                self._open.add(conn)
                return conn
            waiter: asyncio.Future[psycopg.AsyncConnection[Any] | None]
            waiter = asyncio.get_running_loop().create_future()
            self._waiting_for_connection.append(waiter)
            conn = await waiter
            if conn is not None:
                return conn

    def _release(self, conn: psycopg.AsyncConnection[Any] | None) -> None:
        """Give a connection back (None: it was dropped, a new one may be opened), first to a waiter."""
        if conn is None:
            self._opened -= 1
        while self._waiting_for_connection:
            waiter = self._waiting_for_connection.popleft()
            if not waiter.done():
                waiter.set_result(conn)  # None: the waiter opens one itself
                return
        if conn is not None:
            self._free.append(conn)

    def _usable(self, conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncConnection[Any] | None:
        """The connection when it is idle and sound, else dropped (None)."""
        if conn.broken or conn.closed or conn.pgconn.transaction_status != TransactionStatus.IDLE:
            self._drop(conn)
            return None
        return conn

    # ------------------------------------------------------------------------------------ senders

    async def _send(self) -> None:
        batch: list[_Write] = []
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                batch = await self._next_batch()
                try:
                    conn = await self._acquire()
                except Exception as error:  # no connection could be opened: this batch hears why
                    for write in batch:
                        _fail(write, error)
                    batch = []
                    continue
                conn = await self._deliver(conn, batch)
                batch = []
                self._release(conn)
                conn = None
        finally:
            closed = spi.FlowStoreError("the store's writer stopped (store closed or event loop ending)")
            for write in batch:
                if not write.answer.get_loop().is_closed():
                    _fail(write, closed)
            if conn is not None:
                self._drop(conn)  # without awaiting: a collected task runs this with its loop gone

    async def _next_batch(self) -> list[_Write]:
        """Everything queued (up to MAX_BATCH), once there is something."""
        while not self._pending:
            waiter = asyncio.get_running_loop().create_future()
            self._idle.append(waiter)
            await waiter
        return [self._pending.popleft() for _ in range(min(MAX_BATCH, len(self._pending)))]

    async def _alone_here(self, conn: psycopg.AsyncConnection[Any], write: _Write) -> Any:
        """The fast path: the caller sends its own statement on a free connection, then gives it back."""
        try:
            await self._alone(conn, write)
        except Exception as error:
            _fail(write, error)
        finally:
            self._release(self._usable(conn))
        return write.answer.result()

    async def _deliver(
        self, conn: psycopg.AsyncConnection[Any], batch: list[_Write]
    ) -> psycopg.AsyncConnection[Any] | None:
        """Answer every write of `batch`; the connection to use next (None: it was dropped)."""
        try:
            if len(batch) == 1:
                await self._alone(conn, batch[0])
                return conn
            self.writes += len(batch)
            self.transactions += 1
            try:
                rows = await self._together(conn, sorted(batch, key=lambda w: w.order))
            except psycopg.Error as error:
                if conn.broken:
                    raise
                log.info("a batch of %d writes failed (%s); retrying them one by one", len(batch), error)
                self.writes -= len(batch)
                for write in batch:
                    await self._alone(conn, write)
            else:
                for write, row in rows:
                    _answer(write, row)
            return conn
        except Exception as error:
            # The connection is gone or in a state nobody knows: every write still waiting hears the
            # failure (a driver error becomes a retryable FlowStoreError), and a new connection is opened
            # for the next batch.
            for write in batch:
                _fail(write, error)
            self._drop(conn)
            return None

    def _drop(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._open.discard(conn)
        _finish({conn})

    async def _alone(self, conn: psycopg.AsyncConnection[Any], write: _Write) -> None:
        self.writes += 1
        self.transactions += 1
        try:
            row = await _result(write, await conn.execute(write.sql, write.params, prepare=_prepare(write)))
        except psycopg.Error as error:
            if conn.broken:
                raise
            _fail(write, error)
        else:
            _answer(write, row)

    async def _together(
        self, conn: psycopg.AsyncConnection[Any], batch: list[_Write]
    ) -> list[tuple[_Write, Any]]:
        """One transaction for the whole batch, sent in pipeline mode: one round trip, one commit.

        The connection is in autocommit, so PostgreSQL runs everything up to the pipeline's Sync (sent as
        it ends) as one implicit transaction: committed at the Sync, or rolled back whole at the first
        error, which skips the rest (the batch is then retried one by one, see `_deliver`). No BEGIN and
        COMMIT commands: fewer messages, and no psycopg transaction block around them.

        Neighbours with the same text (most writes of a busy worker share a shape) go as one
        `executemany`: one prepared statement, one result set per write, much less client work."""
        sent: list[tuple[list[_Write], psycopg.AsyncCursor[Any]]] = []
        async with conn.pipeline():
            for run in _runs(batch):
                cursor = conn.cursor()
                if len(run) == 1:
                    await cursor.execute(run[0].sql, run[0].params, prepare=_prepare(run[0]))
                else:
                    await cursor.executemany(run[0].sql, [w.params for w in run], returning=True)
                sent.append((run, cursor))
        answered = []
        for run, cursor in sent:
            for i, write in enumerate(run):
                if i:
                    cursor.nextset()
                answered.append((write, await _result(write, cursor)))
        return answered


def _runs(batch: list[_Write]) -> list[list[_Write]]:
    """The batch cut into runs of neighbouring writes with the same statement text, order kept (the
    lock order of the batch). `executemany` prepares its statement, so unpreparable ones go alone."""
    runs: list[list[_Write]] = []
    for write in batch:
        if runs and write.prepare and runs[-1][0].prepare and runs[-1][0].sql == write.sql:
            runs[-1].append(write)
        else:
            runs.append([write])
    return runs


def _prepare(write: _Write) -> bool | None:
    """psycopg's `prepare`: None lets it prepare (by the connection's threshold), False never."""
    return None if write.prepare else False


async def _result(write: _Write, cursor: psycopg.AsyncCursor[Any]) -> Any:
    # the result's status, not `cursor.description`, which builds a Column per column every time
    result = cursor.pgresult
    if result is None or result.status != ExecStatus.TUPLES_OK:
        return [] if write.all_rows else None
    return await cursor.fetchall() if write.all_rows else await cursor.fetchone()


def _finish(conns: set[psycopg.AsyncConnection[Any]]) -> None:
    for conn in list(conns):
        with contextlib.suppress(Exception):
            conn.pgconn.finish()
    conns.clear()


def _answer(write: _Write, row: Any) -> None:
    if not write.answer.done():
        write.answer.set_result(row)


def _fail(write: _Write, error: BaseException) -> None:
    if write.answer.done():
        return
    if isinstance(error, psycopg.Error):
        failure = spi.FlowStoreError(f"{write.operation}: {error}", retryable=is_retryable(error))
        failure.__cause__ = error
        error = failure
    write.answer.set_exception(error)
