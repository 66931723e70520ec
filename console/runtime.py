"""This process's store and engine, shared by the API, the console views, the consumers and the commands.

The web process needs the engine's surfaces (start, signal, describe, search, operator verbs) but runs no
workers: `engine()` answers a `FlowEngine` whose flows are registered and whose worker pool is never started.
Processes with workers (`runworkers`, `demo`) build their own engine. Every one registers the same set with
`serve`: each discovered workflow's declared versions, oldest first, so the newest is what new starts use.

The application client (`console.client`) reaches the store through here too: `caller_transaction()` is the
caller's `transaction.atomic()` block on the store's database, which its synchronous start, signal and
cancel join, and `served_engine()` the same engine with its versions served in memory only, for checking
a start inside that transaction without writing on another connection. A forked child (a Celery prefork
worker) forgets its parent's store and engine: their threads and connections did not come with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import UTC, timedelta
from typing import TypeVar, cast

from django.db import connections

from flowdeck.console import discovery
from flowdeck.console.conf import flowdeck_settings
from flowdeck.engine import body_threads, maintenance, scheduler
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.store import spi
from flowdeck.store.clock import Clock
from flowdeck.store.django import errors as store_errors
from flowdeck.store.django import joined, partitions, sqlite_connection
from flowdeck.store.django.joined import CallerTransaction
from flowdeck.store.django.pooling import Pooling
from flowdeck.store.django.replica import ReplicaReads
from flowdeck.store.django.store import DjangoStore

__all__ = [
    "TRANSIENT",
    "CallerTransaction",
    "caller_transaction",
    "close_store",
    "engine",
    "history_chore",
    "make_engine",
    "open_store",
    "reader",
    "replica_lag",
    "reset",
    "serve",
    "served_engine",
    "store",
]

T = TypeVar("T")
logger = logging.getLogger("flowdeck.console.runtime")

TRANSIENT = store_errors.is_transient
"""Every engine of this process is built with it (`EngineConfig.transient`): a body's locked or busy
database, lost connection or serialization failure is retried, never taken for a mistake (F0001)."""

_lock = threading.RLock()  # engine() builds the store under the same lock
_store: DjangoStore | None = None
_engine: FlowEngine | None = None
_registered = False
_served = False  # every discovered version served in memory (`served_engine`), maybe not yet registered
_reader: FlowEngine | None = None  # the console's reads on the read replica (`reader`)
_replica: ReplicaReads | None = None


def store() -> DjangoStore:
    """The process's store on the configured database alias."""
    global _store
    with _lock:
        if _store is None:
            alias = _steps_made_safe(flowdeck_settings().database_alias)
            _store = DjangoStore(using=alias, pooling=_pooling())
        return _store


def _pooling() -> Pooling:
    """Whether the store's alias goes through a transaction-mode pooler, and where LISTEN goes then."""
    conf = flowdeck_settings()
    return Pooling(
        transaction=conf.transaction_pooler,
        listen_using=conf.listen_database_alias,
        writes_using=conf.writes_database_alias,
    )


def _steps_made_safe(alias: str) -> str:
    """The steps' own ORM work on the store's database is made safe as the store's is (on SQLite: WAL, a
    busy timeout, IMMEDIATE), in every thread that runs steps."""
    body_threads.prepare_threads("store", functools.partial(sqlite_connection.mark_steps_thread, alias))
    # a step that met a lost connection (a restart, a failover) leaves it closed, so its retry reconnects
    body_threads.recover_threads("store", store_errors.drop_broken_connections)
    return alias


def open_store(*, pool_size: int | None = None) -> spi.FlowStore:
    """A store of its own on the configured alias, apart from the shared one: for a part of the process
    that keeps its own connections (the live feed's watcher; a worker process's pool sized to its slots).
    `pool_size` None is the backend's default. Release it with `close_store`."""
    alias = _steps_made_safe(flowdeck_settings().database_alias)
    return DjangoStore(using=alias, pool_size=pool_size, pooling=_pooling())


def close_store(store: spi.FlowStore) -> None:
    """Release a store `open_store` answered: its connections, threads and listener (blocking)."""
    if isinstance(store, DjangoStore):
        store.close()


def history_chore(store: spi.FlowStore, clock: Clock) -> maintenance.Chore | None:
    """The chore that prepares the history's day partitions ahead (PostgreSQL, migration 0018), every hour
    on the engine's clock: today and the next `partitions.AHEAD` days, so that no insert waits for one. None
    for a store that has no partitions to prepare (SQLite; another store)."""
    if not isinstance(store, DjangoStore) or connections[store.using].vendor != "postgresql":
        return None

    async def prepare() -> None:
        today = clock.now().astimezone(UTC).date()
        await store.prepare_history(today, today + timedelta(days=partitions.AHEAD))

    return maintenance.Chore("history partitions", timedelta(hours=1), prepare)


def declared_rate_limits() -> dict[str, RateLimit]:
    """The rate limits of this process: the flows modules' `RATE_LIMITS`, then `FLOWDECK_RATE_LIMITS`
    (the setting wins, so a deployment may tune a limit its code declares)."""
    return {**discovery.declared_rate_limits(), **flowdeck_settings().rate_limits}


async def serve(engine: FlowEngine, only: Iterable[str] | None = None) -> list[str]:
    """Register on `engine` every discovered version (of the workflow ids in `only`, when given), oldest
    first per id: the set every process serves; then upsert the schedules declared for them (the
    declaration wins, a paused one stays paused). Answers the workflow ids served, in order."""
    served: list[str] = []
    engine.declare_rate_limits(declared_rate_limits())
    for workflow_id, flow in discovery.served(only):
        await _patiently(engine.clock, functools.partial(engine.register, workflow_id, flow))
        if workflow_id not in served:
            served.append(workflow_id)
    declared = discovery.declared_schedules(served)
    await _patiently(engine.clock, functools.partial(scheduler.Scheduler(engine).declare, declared))
    return served


STARTUP_PATIENCE = 60.0
"""Seconds a process starting waits out a store that answers "try again" before it gives up."""


async def _patiently(clock: Clock, write: Callable[[], Awaitable[T]]) -> T:
    """`write()`, again while the store says its failure is retryable, for up to `STARTUP_PATIENCE`
    seconds, backing off from 50 ms to 2 s. A worker process starting beside a busy web process on SQLite
    meets "database is locked" when its registration's read must become a write while the web's start
    holds the lock (SQLite refuses that at once, whatever its busy timeout: CI saw `flowdeck_workers` exit
    on it); a PostgreSQL restart is the same. What is not retryable (a missing table) fails at once."""
    give_up = clock.monotonic() + STARTUP_PATIENCE
    delay = 0.05
    while True:
        try:
            return await write()
        except spi.FlowStoreError as error:
            if not error.retryable or clock.monotonic() + delay > give_up:
                raise
            logger.warning(
                "the store answered %s; trying again in %gs", error, delay, extra={"action": "startup_retry"}
            )
        await clock.sleep(delay)
        delay = min(delay * 2, 2.0)


@contextlib.asynccontextmanager
async def make_engine(
    *,
    workers: int | None = None,
    lease: timedelta | None = None,
    renew_every: timedelta | None = None,
    batch_size: int | None = None,
    poll_timeout: timedelta | None = None,
) -> AsyncIterator[FlowEngine]:
    """`async with make_engine() as engine`: a FlowEngine on this process's store serving every discovered
    version (`serve`), its workers running inside the block; settings fill the knobs not given."""
    conf = flowdeck_settings()
    built = FlowEngine(
        store(),
        (),
        workers=conf.workers if workers is None else workers,
        lease=conf.lease if lease is None else lease,
        renew_every=conf.renew_every if renew_every is None else renew_every,
        batch_size=conf.batch_size if batch_size is None else batch_size,
        poll_timeout=conf.poll_timeout if poll_timeout is None else poll_timeout,
        transient=TRANSIENT,
    )
    await serve(built)
    async with built:
        yield built


async def engine() -> FlowEngine:
    """The web process's engine: flows registered (once per process), workers not running."""
    global _engine, _registered
    with _lock:
        if _engine is None:
            _engine = FlowEngine(store(), (), transient=TRANSIENT)
    if not _registered:
        await serve(_engine)
        _registered = True
    return _engine


def served_engine() -> FlowEngine:
    """The web process's engine with every discovered version served, checked in memory only, without the
    registrations' store writes (blocking, and it writes nothing): what the client's start checks against
    inside the caller's transaction, where a write on another connection would wait for that
    transaction's lock (SQLite's one writer). `engine()` still registers them, once."""
    global _engine, _served
    with _lock:
        if _engine is None:
            _engine = FlowEngine(store(), (), transient=TRANSIENT)
        if not (_served or _registered):
            _engine.declare_rate_limits(declared_rate_limits())
            for workflow_id, flow in discovery.served(None):
                _engine.serve(workflow_id, flow)
            _served = True
        return _engine


async def reader() -> FlowEngine:
    """The engine the console's list, overview, search, timeline and history read through: on the read
    replica (`FLOWDECK_READ_REPLICA_ALIAS`) when one is configured, falling back to the primary while it
    does not answer; else the web process's engine. It serves every discovered version in memory and
    writes nothing: starts, signals and operator actions go through `engine()`, on the primary."""
    global _reader, _replica
    primary = await engine()
    alias = flowdeck_settings().read_replica_alias
    if alias is None:
        return primary
    with _lock:
        if _reader is None:
            # the replica's own connections only: the primary's LISTEN and writers' aliases are not for it
            pooling = Pooling(transaction=flowdeck_settings().transaction_pooler)
            replica = DjangoStore(using=alias, pool_size=2, listen=False, pooling=pooling, replica=True)
            _replica = ReplicaReads(replica, primary.store)
            built = FlowEngine(cast(spi.FlowStore, _replica), (), transient=TRANSIENT)
            built.declare_rate_limits(declared_rate_limits())
            for workflow_id, flow in discovery.served(None):
                built.serve(workflow_id, flow)
            _reader = built
        return _reader


async def replica_lag() -> float | None:
    """Seconds the read replica is behind (None: it does not answer); 0 without a replica configured."""
    await reader()
    return 0.0 if _replica is None else await _replica.lag()


def caller_transaction() -> CallerTransaction | None:
    """The calling thread's atomic block on the store's database, whose writes a start, a signal or a
    cancel may join; None outside one (autocommit)."""
    return joined.caller_transaction(store())


def joins_record(store: spi.FlowStore, alias: str) -> bool:
    """Is `store` the process's Django store on database `alias`: may a write of the store join a
    transaction that also writes rows there (an operation's record beside the cancels it made)?"""
    return isinstance(store, DjangoStore) and store is _store and store.using == alias


def reset() -> None:
    """Forget the process's store and engine (tests that switch databases call this)."""
    global _store, _engine, _registered, _served, _reader, _replica
    with _lock:
        if _replica is not None:
            _replica.close()
        if _store is not None:
            _store.close()
        _store, _engine, _registered, _served = None, None, False, False
        _reader, _replica = None, None


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's store and engine without closing them (their threads exist
    only in the parent, and their connections are the parent's to close)."""
    global _lock, _store, _engine, _registered, _served
    _lock = threading.RLock()
    _store, _engine, _registered, _served = None, None, False, False


os.register_at_fork(after_in_child=_forget_after_fork)


def run(coro: object) -> object:
    """Run a coroutine from synchronous code (management commands)."""
    return asyncio.run(coro)  # type: ignore[arg-type]
