"""Flowdeck from application code: start, signal, cancel, describe, search and await executions.

    from flowdeck.console import client

    eid = client.start("fulfilment", order=order)          # a sync view, a command, a Celery task
    eid = await client.astart("fulfilment", order=order)   # an async view
    record = client.result(eid, timeout=30)                 # the outputs, once it completed

Every call has an async twin named as Django names its async ORM calls (`astart`, `asignal`, `acancel`,
`adescribe`, `asearch`, `aresult`). They use this process's engine and store (`console.runtime`, as the
API and the console do) and raise the engine's typed errors: `FlowNotRegistered`, `FlowInputError` (an
undeclared input or a value failing its type), `FlowDuplicateExecution`, `FlowExecutionNotFound`,
`FlowExecutionTerminal`, `FlowAlreadyDelivered`; every check runs before anything is written.

Schedules too (`docs/schedules.md`): `schedules()` (each with its next and last runs), `create_schedule`
(a `flowdeck.scheduled(...)` definition), `pause_schedule`, `resume_schedule`, `trigger_schedule`,
`delete_schedule`, `backfill_schedule` (a dry run unless `dry_run=False`), and their async twins; each
change is recorded in the activity log as `actor` (default `client:<the OS user>`), source `client`.

Synchronous calls need no event loop of the caller's: they run their twin on one long-lived loop of this
process (a daemon thread, started at the first call, again in a forked child), which keeps the store's
connections across calls. Made from a thread that runs an event loop, a synchronous call would block that
loop, so it raises `FlowSyncInAsyncContext` instead, naming the twin to await (as Django raises
`SynchronousOnlyOperation` the other way round).

Inside `transaction.atomic()` on the store's database (`FLOWDECK_DATABASE_ALIAS`), the synchronous
`start`, `signal` and `cancel` join the caller's transaction: written on the caller's connection, they
commit or roll back with the caller's rows, and the workers are woken when it commits, not before. This
replaces the outbox table a Django project would otherwise keep. Django's `atomic` is synchronous only, so
the async twins never join one: `astart` commits on its own. Reads (`describe`, `search`, `result`) see
what is committed; inside such a block on SQLite they raise `FlowInTransaction` (the store's reads there
wait for the write lock the caller's transaction holds).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from flowdeck.console import activity, runtime, sync_bridge
from flowdeck.console import rate_limits as console_rate_limits
from flowdeck.console import schedules as console_schedules
from flowdeck.console.limits import alimits as alimits
from flowdeck.console.limits import aqueue_of as aqueue_of
from flowdeck.console.limits import aqueues_of as aqueues_of
from flowdeck.console.sync_bridge import FlowInTransaction as FlowInTransaction
from flowdeck.console.sync_bridge import FlowSyncInAsyncContext as FlowSyncInAsyncContext
from flowdeck.console.sync_bridge import blocking_read as blocking_read
from flowdeck.engine import errors, interpreter, scheduler, tracing, values
from flowdeck.engine.engine import ExecutionDetail, SearchResult
from flowdeck.store import concurrency, spi
from flowdeck.store import schedules as store_schedules

__all__ = [
    "FlowExecutionCancelled",
    "FlowExecutionFailed",
    "FlowExecutionNotCompleted",
    "FlowExecutionStopped",
    "FlowInTransaction",
    "FlowResultTimeout",
    "FlowSyncInAsyncContext",
    "acancel",
    "adescribe",
    "aresult",
    "asearch",
    "asignal",
    "astart",
    "blocking_read",
    "cancel",
    "describe",
    "result",
    "search",
    "signal",
    "start",
    "schedules",
    "aschedules",
    "rate_limits",
    "arate_limits",
    "limits",
    "alimits",
    "queue_of",
    "aqueue_of",
    "queues_of",
    "aqueues_of",
    "create_schedule",
    "acreate_schedule",
    "pause_schedule",
    "apause_schedule",
    "resume_schedule",
    "aresume_schedule",
    "trigger_schedule",
    "atrigger_schedule",
    "delete_schedule",
    "adelete_schedule",
    "backfill_schedule",
    "abackfill_schedule",
    "start_created",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# `result`'s polls: how often it reads the row while nothing wakes it (an ending wakes nobody), doubling
# from the first to the last; the store's clock measures them, so a ManualClock drives them in tests.
RESULT_POLL_FIRST = timedelta(milliseconds=20)
RESULT_POLL_MAX = timedelta(milliseconds=500)


# ------------------------------------------------------------------------------------------- errors


class FlowResultTimeout(errors.FlowError, TimeoutError):
    """The execution did not settle within the time `result` was given."""

    def __init__(self, execution_id: str, timeout: timedelta, status: spi.Status) -> None:
        super().__init__(
            f"execution {execution_id!r} did not end within {timeout.total_seconds():g}s "
            f"(it is {status.show()})"
        )
        self.execution_id = execution_id
        self.timeout = timeout
        self.status = status


class FlowExecutionNotCompleted(errors.FlowRunEnded):
    """The execution ended (or stopped for a person) without completing; `status` says how."""

    def __init__(self, execution_id: str, flow_id: str, status: spi.Status) -> None:
        super().__init__(flow_id, status)
        self.args = (f"execution {execution_id!r} of {flow_id!r} did not complete: {status.show()}",)
        self.execution_id = execution_id


class FlowExecutionFailed(FlowExecutionNotCompleted):
    """The execution ended Failed (the business said no, or an operator ended it)."""


class FlowExecutionCancelled(FlowExecutionNotCompleted):
    """The execution ended Cancelled."""


class FlowExecutionStopped(FlowExecutionNotCompleted):
    """The execution stopped for a person (a stop code: see the README); it waits for an operator."""


# ------------------------------------------------------------------------------------------- async


async def astart(
    workflow_id: str,
    /,
    *,
    execution_id: str | None = None,
    priority: int | None = None,
    run_after: datetime | None = None,
    **inputs: Any,
) -> str:
    """Start an execution of the newest version of `workflow_id` with `inputs` seeded; answers its id (a
    random one unless given). `priority` (-100 to 100, higher claimed first; the workflow's `Meta.priority`
    when None): `flowdeck.store.claim_order`; `run_after`, an aware datetime no worker runs it before:
    `flowdeck.store.deferral`. Always commits on its own, inside an atomic block or not."""
    engine = await runtime.engine()
    return await engine.workflows.start(
        workflow_id, execution_id=execution_id, inputs=inputs or None, priority=priority, run_after=run_after
    )


async def asignal(execution_id: str, name: str, value: Any) -> None:
    """Deliver input `name` to the execution."""
    engine = await runtime.engine()
    await engine.executions.signal(execution_id, name, value)


async def acancel(
    execution_id: str, reason: str | None = None, *, actor: str | None = None
) -> spi.CancelOutcome:
    """Ask the execution to cancel (its undos run, then it ends Cancelled); answers Accepted,
    AlreadyRequested or AlreadyTerminal. An unknown id raises `FlowExecutionNotFound`. `actor` (who asked)
    is recorded on the request's event."""
    engine = await runtime.engine()
    return await engine.executions.cancel(execution_id, reason or "", actor)


async def adescribe(execution_id: str) -> ExecutionDetail:
    """The execution's row (status, waits, claim, cancel flag), its declared inputs and its progress."""
    engine = await runtime.engine()
    return await engine.executions.describe(execution_id)


async def asearch(
    workflow_id: str | None = None,
    status: str | spi.ExecutionFilter.Any | None = None,
    *,
    where: Sequence[str | spi.FieldMatch] = (),
    limit: int = 25,
    offset: int = 0,
    id_prefix: str | None = None,
    order_by: str = "created",
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> SearchResult:
    """Executions matching the filter, newest first: `status` in the wire words ("running",
    "waiting:approval", "stopped:F0001" ...), `where` field terms (`field:order.customer=ada`); a word
    or term naming nothing raises `spi.FilterParseError` (a ValueError)."""
    engine = await runtime.engine()
    return await engine.executions.search(
        workflow_id,
        status,
        limit,
        offset,
        id_prefix,
        where,
        order_by=order_by,
        created_after=created_after,
        created_before=created_before,
    )


async def aresult(execution_id: str, timeout: float | timedelta | None = None) -> values.Record:
    """Wait until the execution settles and answer its outputs: every valued node by attribute, as
    `run_local` answers them. Failed, Cancelled and Stopped raise `FlowExecutionFailed`,
    `FlowExecutionCancelled` and `FlowExecutionStopped` (carrying `status`); past `timeout` (seconds or a
    timedelta; None waits as long as it takes) `FlowResultTimeout`."""
    engine = await runtime.engine()
    store = engine.store
    clock = getattr(store, "clock", engine.clock)
    limit = timeout if isinstance(timeout, timedelta) or timeout is None else timedelta(seconds=timeout)
    deadline = None if limit is None else clock.monotonic() + limit.total_seconds()
    pause = RESULT_POLL_FIRST
    while True:
        state = await store.get_execution(execution_id)
        if state is None:
            raise errors.FlowExecutionNotFound(execution_id)
        if state.status.terminal or isinstance(state.status, spi.Stopped):
            return await _outputs(engine, state)
        wait = pause
        if deadline is not None:
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                raise FlowResultTimeout(execution_id, limit or timedelta(0), state.status)
            wait = min(pause, timedelta(seconds=remaining))
        # a signal or a cancel wakes it at once (the hub); an ending is seen at the next poll
        await store.wait_for_change(wait)
        pause = min(pause * 2, RESULT_POLL_MAX)


async def _outputs(engine: Any, state: spi.ExecutionState) -> values.Record:
    """A settled execution's record, or the error saying how it ended without completing."""
    eid, status = state.execution_id, state.status
    match status:
        case spi.Completed():
            pass
        case spi.Failed():
            raise FlowExecutionFailed(eid, state.flow_id, status)
        case spi.Cancelled():
            raise FlowExecutionCancelled(eid, state.flow_id, status)
        case _:
            raise FlowExecutionStopped(eid, state.flow_id, status)
    flow = engine.flow_of(state)
    if flow is None:  # ended under a version nobody here serves: its record cannot be read back typed
        raise errors.FlowNotRegistered(f"{state.flow_id}@{state.hash}", [state.flow_id])
    return interpreter.assemble_record(flow, await engine.store.get_all_fields(eid))


# -------------------------------------------------------------------------------------------- sync


def start(
    workflow_id: str,
    /,
    *,
    execution_id: str | None = None,
    priority: int | None = None,
    run_after: datetime | None = None,
    **inputs: Any,
) -> str:
    """`astart`, blocking. Inside `transaction.atomic()` on the store's database it joins that
    transaction: the execution exists only if the transaction commits, and the workers hear of it at the
    commit. A duplicate id raises `FlowDuplicateExecution` and leaves the caller's transaction usable."""
    started = start_created(
        workflow_id, execution_id=execution_id, priority=priority, run_after=run_after, **inputs
    )
    return started[0]


def start_created(
    workflow_id: str,
    /,
    *,
    execution_id: str | None = None,
    priority: int | None = None,
    run_after: datetime | None = None,
    **inputs: Any,
) -> tuple[str, datetime]:
    """`start`, answering with the id the creation time it recorded (what the tasks backend hands back
    as `enqueued_at`, equal to what a later read of the execution finds)."""
    sync_bridge.no_running_loop("start")
    joined = runtime.caller_transaction()
    options = {"priority": priority, "run_after": run_after}
    if joined is None:
        return sync_bridge.run(lambda: _astart_created(workflow_id, execution_id, inputs, options))
    engine = runtime.served_engine()
    with engine.tracing.starting("StartFlow", workflow_id, {tracing.WORKFLOW_ID: workflow_id}) as started:
        eid, version, created, fields = engine.workflows.prepare_start(
            workflow_id, execution_id, inputs, carrier=started.carrier(), **options
        )
        started.execution(eid)
        if not joined.create_execution_if_absent(
            eid, workflow_id, version.hash, spi.Running(), created, fields
        ):
            raise errors.FlowDuplicateExecution(eid)
    logger.info(
        "started %s of %s@%s in the caller's transaction",
        eid,
        workflow_id,
        version.hash,
        extra={"action": "start", "execution_id": eid, "workflow_id": workflow_id, "joined": True},
    )
    return eid, created.timestamp


async def _astart_created(
    workflow_id: str, execution_id: str | None, inputs: dict[str, Any], options: dict[str, Any]
) -> tuple[str, datetime]:
    """`start_created` outside the caller's transaction; `options`: the start's priority and run_after."""
    engine = await runtime.engine()
    with engine.tracing.starting("StartFlow", workflow_id, {tracing.WORKFLOW_ID: workflow_id}) as started:
        eid, version, created, fields = engine.workflows.prepare_start(
            workflow_id, execution_id, inputs, carrier=started.carrier(), **options
        )
        started.execution(eid)
        if not await engine.store.create_execution_if_absent(
            eid, workflow_id, version.hash, spi.Running(), created, fields
        ):
            raise errors.FlowDuplicateExecution(eid)
    logger.info(
        "started %s of %s@%s",
        eid,
        workflow_id,
        version.hash,
        extra={"action": "start", "execution_id": eid, "workflow_id": workflow_id, "joined": False},
    )
    return eid, created.timestamp


def signal(execution_id: str, name: str, value: Any) -> None:
    """`asignal`, blocking. Inside `transaction.atomic()` on the store's database it joins that
    transaction (it sees an execution started earlier in it): delivered only if the transaction commits."""
    sync_bridge.no_running_loop("signal")
    joined = runtime.caller_transaction()
    if joined is None:
        sync_bridge.run(lambda: asignal(execution_id, name, value))
        return
    engine = runtime.served_engine()
    executions = engine.executions
    with engine.tracing.starting("SignalFlow", name, tracing.signalling(execution_id, name)) as started:
        state = joined.get_execution(execution_id)
        field, event = executions.prepare_signal(execution_id, state, name, value, carrier=started.carrier())
        executions.signal_outcome(execution_id, name, joined.signal(execution_id, name, field, event))


def cancel(execution_id: str, reason: str | None = None, *, actor: str | None = None) -> spi.CancelOutcome:
    """`acancel`, blocking. Inside `transaction.atomic()` on the store's database it joins that
    transaction, as `start` does."""
    sync_bridge.no_running_loop("cancel")
    joined = runtime.caller_transaction()
    if joined is None:
        return sync_bridge.run(lambda: acancel(execution_id, reason, actor=actor))
    if joined.get_execution(execution_id) is None:
        raise errors.FlowExecutionNotFound(execution_id)
    return joined.request_cancel(execution_id, reason or "", actor)


def describe(execution_id: str) -> ExecutionDetail:
    """`adescribe`, blocking: what is committed."""
    return sync_bridge.read_one("describe", execution_id, lambda: adescribe(execution_id))


def search(
    workflow_id: str | None = None,
    status: str | spi.ExecutionFilter.Any | None = None,
    *,
    where: Sequence[str | spi.FieldMatch] = (),
    limit: int = 25,
    offset: int = 0,
    id_prefix: str | None = None,
    order_by: str = "created",
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> SearchResult:
    """`asearch`, blocking."""
    sync_bridge.read_only("search")
    window = {"created_after": created_after, "created_before": created_before}
    return sync_bridge.run(
        lambda: asearch(
            workflow_id,
            status,
            where=where,
            limit=limit,
            offset=offset,
            id_prefix=id_prefix,
            order_by=order_by,
            **window,
        )
    )


def result(execution_id: str, timeout: float | timedelta | None = None) -> values.Record:
    """`aresult`, blocking."""
    return sync_bridge.read_one("result", execution_id, lambda: aresult(execution_id, timeout))


# ---------------------------------------------------------------------------------------- schedules


async def arate_limits() -> list[console_rate_limits.Shown]:
    """Every rate limit: configured and observed rate, executions rate-limited now, busiest keys."""
    return list(await console_rate_limits.shown_all())


def rate_limits() -> list[console_rate_limits.Shown]:
    return blocking_read("rate_limits", arate_limits)


def _actor(actor: str | None) -> str:
    return actor or activity.cli_actor().replace("cli:", "client:", 1)


async def aschedules() -> list[console_schedules.Shown]:
    """Every schedule with its next runs and its last runs (each with its execution's state)."""
    return await console_schedules.shown_all()


async def acreate_schedule(spec: store_schedules.ScheduleSpec, *, actor: str | None = None) -> str:
    """Create a schedule (`flowdeck.scheduled(...)`); FlowScheduleError, FlowScheduleExists when refused."""
    return (await console_schedules.create(spec, _actor(actor), "client")).name


async def apause_schedule(name: str, *, actor: str | None = None) -> None:
    await console_schedules.pause(name, True, _actor(actor), "client")


async def aresume_schedule(name: str, *, actor: str | None = None) -> None:
    await console_schedules.pause(name, False, _actor(actor), "client")


async def atrigger_schedule(name: str, *, actor: str | None = None) -> str:
    """Start the schedule's workflow now; answers the execution id."""
    return await console_schedules.trigger(name, _actor(actor), "client")


async def adelete_schedule(name: str, *, actor: str | None = None) -> None:
    await console_schedules.delete(name, _actor(actor), "client")


async def abackfill_schedule(
    name: str, start: datetime, end: datetime, *, dry_run: bool = True, actor: str | None = None
) -> scheduler.Backfill:
    """The schedule's ticks in [start, end]: listed (a dry run, the default), or started."""
    return await console_schedules.backfill(
        name, start, end, dry_run=dry_run, actor=_actor(actor), source="client"
    )


def limits(workflow_id: str | None = None, busiest: int = 10) -> list[concurrency.GroupCount]:
    return blocking_read("limits", lambda: alimits(workflow_id, busiest))


def queue_of(execution_id: str) -> concurrency.Queued | None:
    return blocking_read("queue_of", lambda: aqueue_of(execution_id))


def queues_of(execution_ids: Iterable[str]) -> dict[str, concurrency.Queued]:
    return blocking_read("queues_of", lambda: aqueues_of(execution_ids))


def schedules() -> list[console_schedules.Shown]:
    return blocking_read("schedules", aschedules)


def create_schedule(spec: store_schedules.ScheduleSpec, *, actor: str | None = None) -> str:
    sync_bridge.no_running_loop("create_schedule")
    return sync_bridge.run(lambda: acreate_schedule(spec, actor=actor))


def pause_schedule(name: str, *, actor: str | None = None) -> None:
    sync_bridge.no_running_loop("pause_schedule")
    sync_bridge.run(lambda: apause_schedule(name, actor=actor))


def resume_schedule(name: str, *, actor: str | None = None) -> None:
    sync_bridge.no_running_loop("resume_schedule")
    sync_bridge.run(lambda: aresume_schedule(name, actor=actor))


def trigger_schedule(name: str, *, actor: str | None = None) -> str:
    sync_bridge.no_running_loop("trigger_schedule")
    return sync_bridge.run(lambda: atrigger_schedule(name, actor=actor))


def delete_schedule(name: str, *, actor: str | None = None) -> None:
    sync_bridge.no_running_loop("delete_schedule")
    sync_bridge.run(lambda: adelete_schedule(name, actor=actor))


def backfill_schedule(
    name: str, start: datetime, end: datetime, *, dry_run: bool = True, actor: str | None = None
) -> scheduler.Backfill:
    sync_bridge.no_running_loop("backfill_schedule")
    return sync_bridge.run(lambda: abackfill_schedule(name, start, end, dry_run=dry_run, actor=actor))
