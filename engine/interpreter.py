"""The replay interpreter: one attempt at an execution, replaying the plan and skipping what is recorded.

An attempt reads the record (fields and history) once, then walks the flow's nodes from the start. A node
whose record it finds is skipped and its value read back (its compensations noted again); the first node
without one runs, and is recorded before the next begins. Recording a node is ONE store write, and it is
the write that starts the next node: before a body runs, one write carries the previous node's record
(value, undo notes, completion: `Attempt.deferred`), the events pending since (the attempt's
ExecutionClaimed, a consumed input, a woken sleep) and this node's StepStarted. So a start is durable before
its body, and the cancel flag that same write answers (`Claimed.cancel_requested`, refreshed by every
accepted write, so the check costs no read) decides whether the body runs: a node whose start is recorded
after a cancel request never runs. The last record lands just before the attempt's end (a step's, which is
only events, with it); the store refuses the Completed ending while a request is outstanding (I2), and the
attempt then unwinds and ends Cancelled. The record may come with the claim (`Claimed.prefetched_ledger`).

How an attempt ends (`run_attempt` answers an `AttemptReport`):

* the walk reaches the end → Terminal(Completed), or, when the store refuses it for a cancel request that
  landed meanwhile, the unwind → Cancelled(reason);
* a wait (input, sleep, a long retry back-off) → `Parked(paths)` → Suspended(paths), holding nothing;
* a `FlowDomainError` or a cancellation → the unwind (engine/compensation.py) → Failed(error, kind) or
  Cancelled(reason);
* the world not answering past the node's schedule → Stop(F0003); a mistake → Stop(F0001), nothing undone;
  an at-most-once node found started but unfinished → Stop(F0004);
* a lost claim, a store failure, or the task being cancelled → nothing more is written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from engine import compensation, nodes, values
from engine.context import Context
from engine.errors import (
    FlowCancelled,
    FlowDomainError,
    FlowLoopExhausted,
    FlowNondeterministicCollection,
    FlowRetry,
    FlowStepTimeout,
)
from engine.flow import Flow, LoopAgain, LoopDone
from engine.nodes import NO_STATE, Body, Knobs
from store import spi
from store.clock import Clock

__all__ = [
    "AttemptReport",
    "ClaimLost",
    "Halt",
    "Parked",
    "Question",
    "StopFor",
    "assemble_record",
    "qualify",
    "run_attempt",
]

Runner = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""`await runner(walk)` wraps an attempt's walk (forward pass and unwind together), for bodies needing a
context the engine does not set up itself; it must await `walk()` and hand back its answer."""

SHORT_RETRY = timedelta(seconds=1)
"""Back-offs shorter than this sleep in-process; longer ones become a durable wait row."""


# ------------------------------------------------------------------------------------------- signals


class Parked(Exception):
    """The walk waits on these rows; the attempt ends Suspended(paths), holding nothing."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        super().__init__(", ".join(sorted(self.paths)))


class StopFor(Exception):
    """The execution stops for a person with this stop code."""

    def __init__(
        self, code: str, node: str, reason: str, detail: str = "", cause: spi.Cause | None = None
    ) -> None:
        super().__init__(f"{code} at {node}: {reason}")
        self.stopped = spi.Stopped(code, node, reason, detail, cause)


class ClaimLost(Exception):
    """A write was refused: this attempt no longer holds the execution."""


class ResumedUnwind(Exception):
    """An attempt resuming an unwind reached a node that would do work: the recorded verdict stands."""

    def __init__(self, cause: spi.Cause) -> None:
        super().__init__("resuming the unwind")
        self.cause = cause


class Halt(Exception):
    """Dry run only: the node at `path` would run a body (or wait); the replay stops there."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Question(Exception):
    """Dry run only: a recorded node is now asked a different question (F0102)."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


_REFUSED = (spi.WriteOutcome.CLAIM_LOST, spi.ProgressOutcome.CLAIM_LOST)
"""A write's answer saying this attempt no longer holds the execution."""

_PASS_THROUGH = (Parked, StopFor, ClaimLost, ResumedUnwind, Halt, Question, spi.FlowStoreError, FlowCancelled)
"""Exceptions that are the interpreter's own verdicts or infrastructure: never a body's mistake."""


@dataclass(frozen=True)
class Deferred:
    """A node's record waiting for the attempt's next write: its path, value, extra fields (undo notes, a
    foreach's count) and the events up to its own completion, in order."""

    path: str
    value: spi.FieldData | None
    events: list[spi.Event]
    extra: dict[str, spi.FieldData]


@dataclass(frozen=True)
class AttemptReport:
    execution_id: str
    outcome: str  # completed, failed, cancelled, suspended, stopped, claim-lost, no-work
    detail: str = ""


# ------------------------------------------------------------------------------------------- helpers


def qualify(prefix: str, name: str) -> str:
    """The durable path of node `name` inside a subflow keyed `prefix` (spec §3.7)."""
    return f"{prefix}~{name}" if prefix else name


def describe(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def mistake(path: str, error: BaseException) -> StopFor:
    """A mistake in the program: stop for a person, keeping the traceback; nothing is undone."""
    return StopFor("F0001", path, f"{type(error).__name__}: {error}", describe(error))


def list_type(declared: Any) -> Any:
    return None if declared is None else list[declared]


def state_type(initial: Any) -> Any:
    """A loop's state is recorded as JSON unless its initial value is a pydantic model."""
    return type(initial) if isinstance(initial, BaseModel) else None


def child_inputs(flow: Flow) -> list[nodes.Input]:
    """The inputs a subflow's mapper may supply: the child's own, outside nested subflows."""
    found: list[nodes.Input] = []

    def visit(items: Sequence[nodes.Node]) -> None:
        for node in items:
            if isinstance(node, nodes.Input):
                found.append(node)
            elif isinstance(node, nodes.Parallel):
                for branch in node.branches:
                    visit(branch.nodes)

    visit(flow.nodes)
    seen: dict[str, nodes.Input] = {}
    for node in found:
        seen.setdefault(node.name, node)
    return list(seen.values())


def listens(items: Sequence[nodes.Node]) -> bool:
    """Whether the flow listens for cancellation (an `on_cancel` on some wait)."""
    for node in items:
        if isinstance(node, nodes.Input | nodes.Sleep) and node.on_cancel is not None:
            return True
        if isinstance(node, nodes.Parallel) and any(listens(b.nodes) for b in node.branches):
            return True
        if isinstance(node, nodes.Subflow) and listens(node.child.nodes):
            return True
    return False


@dataclass
class Scope:
    """Where a walk is: the durable prefix (a subflow's `name~`) and the values its bodies can read."""

    prefix: str
    values: dict[str, Any] = field(default_factory=dict)

    def child(self) -> Scope:
        return Scope(self.prefix, dict(self.values))


@dataclass
class Ledger:
    """What history says, derived once per attempt (spec §5.2 step 6)."""

    completed: set[str] = field(default_factory=set)
    compensated: set[str] = field(default_factory=set)
    retried: Counter[str] = field(default_factory=Counter)
    last_step_event: dict[str, spi.EventKind] = field(default_factory=dict)
    # each sleep's first deadline, so a sleep whose row was retired (by a stop) keeps it on resume
    sleep_until: dict[str, datetime] = field(default_factory=dict)

    @classmethod
    def of(cls, history: Iterable[spi.Event]) -> Ledger:
        ledger = cls()
        kind = spi.EventKind
        for event in history:
            data = event.data
            match event.kind:
                case kind.STEP_COMPLETED | kind.SLEEP_COMPLETED:
                    ledger.completed.add(data.get("step_name", ""))
                case kind.INPUT_DISCHARGED | kind.INPUT_SUPPLIED:
                    ledger.completed.add(data.get("input_name", ""))
                case kind.ANSWERED:
                    ledger.completed.add(data.get("node", ""))
                case kind.NODE_COMPENSATED:
                    ledger.compensated.add(data.get("node_name", ""))
                case kind.STEP_RETRIED:
                    ledger.retried[data.get("step_name", "")] += 1
                case kind.SLEEP_STARTED if "until" in data:
                    ledger.sleep_until.setdefault(
                        data.get("step_name", ""), datetime.fromisoformat(data["until"])
                    )
            if event.kind in (kind.STEP_STARTED, kind.STEP_COMPLETED, kind.STEP_RETRIED, kind.STEP_FAILED):
                ledger.last_step_event[data.get("step_name", "")] = event.kind
            elif event.kind is kind.ANSWERED:
                ledger.last_step_event[data.get("node", "")] = event.kind
        return ledger


# ------------------------------------------------------------------------------------------- attempt


class Attempt:
    """One walk of a flow against its record. With `claimed` None it is a dry run: it never writes, and
    stops (Halt) at the first node that would run a body or wait."""

    def __init__(
        self,
        flow: Flow,
        *,
        execution_id: str,
        status: spi.Status,
        fields: Mapping[str, spi.FieldData],
        history: Iterable[spi.Event],
        clock: Clock,
        claimed: spi.Claimed | None = None,
        executor_id: str = "",
        waits: Mapping[str, spi.Wake] | None = None,
        satisfied: frozenset[str] = frozenset(),
    ) -> None:
        self.flow = flow
        self.execution_id = execution_id
        self.status = status
        self.fields = dict(fields)
        self.clock = clock
        self.claimed = claimed
        self.dry = claimed is None
        self.executor_id = executor_id
        self.waits = dict(waits or {})
        self.satisfied = satisfied
        ledger = Ledger.of(history)
        self.completed = ledger.completed
        self.compensated = ledger.compensated
        self.retried = ledger.retried
        self.sleep_until = ledger.sleep_until
        # started and never finished, as history left them (F0004 for an at-most-once node)
        self.unfinished = {p for p, k in ledger.last_step_event.items() if k is spi.EventKind.STEP_STARTED}
        self.resume_cause = status.cause if isinstance(status, spi.Compensating) else None
        self.listening = listens(flow.nodes)
        self.pending: list[spi.Event] = []
        # a step's completion waiting in `pending` that must be durable before the next body runs
        self.unflushed = False
        self.pending_fields: dict[str, spi.FieldData] = {}
        self.deferred: Deferred | None = None  # a node's record riding on the next write
        self.inflight: set[asyncio.Future[Any]] = set()  # a fork's writes in flight (see `_io`)
        self.broken: BaseException | None = None  # the first of them that failed
        self.forks = 0  # how many joins and races are running their branches side by side
        self.handlers: list[compensation.Handler] = []
        self.discharged: set[str] = set()
        self.kept: list[str] = []  # recorded paths the walk took as kept (the dry run reports them)
        self.virtual: set[str] = set()  # dry run: values computed in memory, never recorded

    # ------------------------------------------------------------------------------------- events

    def event(self, kind: spi.EventKind, **data: Any) -> spi.Event:
        return spi.Event(kind, self.flow.name, self.execution_id, self.clock.now(), data)

    def started(self, path: str) -> spi.Event:
        return self.event(spi.EventKind.STEP_STARTED, step_name=path, executor_id=self.executor_id)

    def keep(self, path: str) -> None:
        if path not in self.virtual:
            self.kept.append(path)

    # ------------------------------------------------------------------------------------- writes
    # Every write takes the pending events (and pending fields) with it, in one transaction. A node's
    # record (value, undo notes, completion) does not go out on its own: it waits in `deferred` and rides on
    # the next write, which before a body is the one that records that body's start. So a start is durable
    # BEFORE its body runs, and the cancel flag that very write answers decides whether the body runs at all
    # (a request recorded after it is seen by the next node's start, or refuses the Completed ending).

    def _claim(self) -> spi.Claimed:
        if self.claimed is None:  # a dry run reaching a write is a bug in the walk, not a user's
            raise RuntimeError("a dry run tried to write")
        return self.claimed

    def _take(self) -> list[spi.Event]:
        taken, self.pending = self.pending, []
        self.unflushed = False
        return taken

    async def _io(self, write: Awaitable[Any]) -> Any:
        """Await one write. Inside a fork a branch can be cancelled (a race's loser, a failed sibling's)
        while its write carries what other branches left pending (a record, a start): the write then goes
        on in its own task, never dropped half way, and is tracked in `inflight` so that a branch whose
        start it took waits for it before running its body (`flush`)."""
        if not self.forks:
            return await write
        task = asyncio.ensure_future(write)
        task.add_done_callback(self._landed)
        self.inflight.add(task)
        return await asyncio.shield(task)

    def _landed(self, task: asyncio.Future[Any]) -> None:
        self.inflight.discard(task)
        if task.cancelled() or self.broken is not None:
            return
        error = task.exception()
        if error is None and task.result() in _REFUSED:
            error = ClaimLost("a write in flight was refused")
        self.broken = error

    async def _send(self, deferred: Deferred | None, events: list[spi.Event]) -> None:
        """One write: the deferred record (record_progress) with `events` after it, or the events alone."""
        claimed = self._claim()
        if deferred is None:
            done = await self._io(claimed.append_event(events[-1], preceding=events[:-1]))
            if done is spi.WriteOutcome.CLAIM_LOST:
                raise ClaimLost(events[-1].kind.value)
            return
        events = [*deferred.events, *events]
        write = claimed.record_progress(
            deferred.path,
            deferred.value,
            events[-1],
            preceding=events[:-1],
            extra_fields=deferred.extra or None,
        )
        if await self._io(write) is spi.ProgressOutcome.CLAIM_LOST:
            raise ClaimLost(deferred.path)

    async def drain(self) -> None:
        """A fork ends: wait for its branches' writes still in flight (a cancelled branch's goes on), and
        give up the attempt if one of them failed (what it carried may be lost)."""
        while self.inflight:
            await asyncio.wait(set(self.inflight))
        self.forks -= 1
        if self.broken is not None:
            raise self.broken

    async def settle(self) -> None:
        """Write a deferred record now, on its own, before a write that cannot carry it."""
        while self.deferred is not None:
            deferred, self.deferred = self.deferred, None
            await self._send(deferred, self._take())

    async def flush(self, start: spi.Event | None = None) -> None:
        """Make everything pending durable (a deferred record, events, the next node's `start`) in one
        write. Inside a fork another branch's write may have taken this start with it: then wait until the
        writes in flight have landed instead."""
        if start is not None and not any(event is start for event in self.pending):
            while self.inflight:
                await asyncio.wait(set(self.inflight))
            if self.broken is not None:  # the write that carried this start was refused or failed
                raise self.broken
            return
        if self.deferred is None and not self.pending:
            return
        deferred, self.deferred = self.deferred, None
        await self._send(deferred, self._take())

    async def defer(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        extra: Mapping[str, spi.FieldData] | None = None,
    ) -> None:
        """Record progress at `path` with the attempt's next write (see above); the walk sees it at once."""
        self._claim()
        await self.settle()
        extra_fields = {**self.pending_fields, **(extra or {})}
        self.pending_fields = {}
        self.deferred = Deferred(path, value, [*self._take(), event], extra_fields)
        if value is not None:
            self.fields[path] = value
        for name, data in extra_fields.items():
            self.fields.setdefault(name, data)
        self.waits.pop(path, None)

    async def progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        extra: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        claimed = self._claim()
        await self.settle()
        extra_fields = {**self.pending_fields, **(extra or {})}
        self.pending_fields = {}
        outcome = await self._io(
            claimed.record_progress(
                path,
                value,
                event,
                preceding=self._take(),
                extra_fields=extra_fields or None,
                clear_cancel=clear_cancel,
            )
        )
        if outcome is spi.ProgressOutcome.CLAIM_LOST:
            raise ClaimLost(path)
        if value is not None and outcome is spi.ProgressOutcome.RECORDED:
            self.fields[path] = value
        for name, data in extra_fields.items():
            self.fields.setdefault(name, data)
        self.waits.pop(path, None)
        return outcome

    async def wait(self, path: str, wake: spi.Wake, event: spi.Event) -> None:
        await self.settle()
        outcome = await self._io(self._claim().record_wait(path, wake, event, preceding=self._take()))
        if outcome is spi.WriteOutcome.CLAIM_LOST:
            raise ClaimLost(path)
        self.waits.setdefault(path, wake)

    async def set_status(self, status: spi.Status, event: spi.Event) -> None:
        await self.settle()
        outcome = await self._claim().update_status(status, event, preceding=self._take())
        if outcome is not spi.StatusOutcome.APPLIED:
            raise ClaimLost(status.show())
        self.status = status

    async def finish(self, outcome: spi.ClaimOutcome) -> spi.StatusOutcome:
        await self.settle()
        events = self._take()
        released = self.event(spi.EventKind.EXECUTION_RELEASED, executor_id=self.executor_id)
        answer = await self._claim().finish(outcome, preceding=[*events, released])
        if answer is spi.StatusOutcome.CANCEL_REQUESTED:
            self.pending[:0] = events  # nothing was written: they ride on the unwind's first write
        return answer

    # ------------------------------------------------------------------------------------- bodies

    async def call(self, body: Body, *args: Any) -> Any:
        """Run a body: awaited when async, in a thread when sync; its arity picks the arguments."""
        args = args[: body.arity]
        if body.is_async:
            result = body.fn(*args)
        else:
            result = await asyncio.to_thread(body.fn, *args)
        if inspect.isawaitable(result):  # a plain lambda handing back a coroutine
            result = await result
        return result

    async def pure(self, body: Body, *args: Any) -> Any:
        """Run a pure part (a condition, a mapper, a collection, an on_cancel) inline: cheap, no thread."""
        result = body.fn(*args[: body.arity])
        if inspect.isawaitable(result):
            result = await result
        return result

    def context(self, scope: Scope, path: str, attempt: int = 0, undos: list[Any] | None = None) -> Context:
        return Context(scope.values, execution_id=self.execution_id, path=path, attempt=attempt, undos=undos)

    async def timed(self, path: str, timeout: timedelta | None, run: Callable[[], Awaitable[Any]]) -> Any:
        """One attempt of a body, bounded by the injected clock; a sync body's thread is abandoned."""
        if timeout is None:
            return await run()
        task = asyncio.ensure_future(run())
        timer = asyncio.ensure_future(self.clock.sleep(timeout.total_seconds()))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            timer.cancel()
        if task.done():
            return task.result()
        task.cancel()
        task.add_done_callback(_swallow)
        self.pending.append(
            self.event(spi.EventKind.STEP_TIMED_OUT, step_name=path, timeout=timeout.total_seconds())
        )
        raise FlowStepTimeout(path, timeout)

    async def with_retry(
        self,
        path: str,
        knobs: Knobs,
        once: Callable[[int], Awaitable[Any]],
        *,
        retry_any: bool = False,
        exhausted: Callable[[BaseException], BaseException] | None = None,
    ) -> Any:
        """Run `once(attempt)` under the node's timeout, retrying what the world did not answer.

        The count starts from the StepRetried events in history, so a restart does not reset the budget.
        A back-off under a second sleeps in-process; a longer one is a durable wait row
        (`path#retry<n>`) and the attempt parks on it.
        """
        for wait_path, wake in self.waits.items():
            due = isinstance(wake, spi.WakeAt) and self.clock.now() >= wake.at
            if wait_path.startswith(f"{path}#retry") and wait_path not in self.satisfied and not due:
                raise Parked({wait_path})
        attempt = self.retried[path]
        while True:
            after: timedelta | None = None
            try:
                return await self.timed(path, knobs.timeout, functools.partial(once, attempt))
            except _PASS_THROUGH:
                raise
            except FlowStepTimeout as error:
                failure: BaseException = error
            except FlowRetry as error:
                failure, after = error, error.after
            except FlowDomainError as error:
                if not retry_any:
                    raise
                failure = error
            except Exception as error:
                if not retry_any and not isinstance(error, knobs.retry_on or ()):
                    raise
                failure = error
            delay = knobs.retry.delay(attempt) if knobs.retry is not None else None
            if delay is None:
                if exhausted is not None:
                    raise exhausted(failure) from failure
                self.pending.append(self.failed_event(path, failure))
                raise StopFor(
                    "F0003",
                    path,
                    f"the world did not answer after {attempt + 1} tries: {failure}",
                    describe(failure),
                ) from failure
            if after is not None:
                delay = after
            attempt += 1
            self.retried[path] = attempt
            retried = self.event(
                spi.EventKind.STEP_RETRIED,
                step_name=path,
                error=str(failure),
                attempt=attempt,
                delay=delay.total_seconds(),
            )
            if delay < SHORT_RETRY:
                self.pending.append(retried)
                await self.clock.sleep(delay.total_seconds())
                continue
            row = f"{path}#retry{attempt}"
            await self.wait(row, spi.WakeAt(self.clock.now() + delay), retried)
            raise Parked({row})

    def failed_event(self, path: str, error: BaseException) -> spi.Event:
        kind = type(error).__name__ if isinstance(error, FlowDomainError) else None
        return self.event(spi.EventKind.STEP_FAILED, step_name=path, error=str(error), error_kind=kind)

    # -------------------------------------------------------------------------------------- guard

    def guard(self, path: str) -> None:
        """A node boundary that does work: a dry run stops here; a resumed unwind raises its verdict; a
        cancel request (unless the flow listens at its waits) starts the unwind."""
        if self.dry:
            raise Halt(path)
        if self.resume_cause is not None:
            raise ResumedUnwind(self.resume_cause)
        claimed = self._claim()
        if claimed.cancel_requested and not self.listening:
            raise FlowCancelled(claimed.cancel_reason)

    def heard_cancel(self) -> str | None:
        """The reason of a cancel a listening wait should hear now, or None."""
        if self.dry or self.resume_cause is not None or self.claimed is None:
            return None
        return self.claimed.cancel_reason if self.claimed.cancel_requested else None

    # --------------------------------------------------------------------------------- node runs

    async def execute(
        self,
        path: str,
        knobs: Knobs,
        scope: Scope,
        body: Callable[[Context], Awaitable[Any]],
        undos: list[Any] | None = None,
        *,
        announce: bool = True,
    ) -> tuple[Any, list[Any]]:
        """Start a node at `path` and run its body under timeout and retry; answer (result, undo notes).

        `announce` False: a loop's later iteration, which passes the guard again but is not a new start."""
        self.guard(path)  # first: a cancel request (or a resumed unwind) wins over an unknown outcome
        if knobs.at_most_once and path in self.unfinished and path not in self.completed:
            raise StopFor(
                "F0004",
                path,
                "an at-most-once node was started and never finished: nobody knows whether it acted",
            )
        notes: list[Any] = [] if undos is None else undos
        start = self.started(path) if announce else None
        if start is not None or self.unflushed or self.deferred is not None:
            if start is not None:
                self.pending.append(start)
            # ONE write before the body: the previous node's record, what is pending, and this start. It
            # answers the cancel flag as of this start: a request recorded before it stops the body here,
            # one recorded after it is heard by the next start or refuses the Completed ending.
            await self.flush(start)
            self.guard(path)

        async def once(attempt: int) -> Any:
            return await body(self.context(scope, path, attempt, notes))

        try:
            result = await self.with_retry(path, knobs, once)
        except _PASS_THROUGH:
            raise
        except FlowDomainError as error:
            self.pending.append(self.failed_event(path, error))
            raise
        except Exception as error:
            self.pending.append(self.failed_event(path, error))
            raise mistake(path, error) from error
        return result, notes

    async def record(
        self,
        path: str,
        value: Any,
        declared: Any,
        notes: Sequence[Any],
        *,
        valued: bool = True,
        at_once: bool = False,
    ) -> Any:
        """Record a node's completion (value, undo notes, events) with the attempt's next write; answer the
        value as the store gives it back. `at_once`: in a write of its own, now (an at-most-once node,
        whose completion must not wait for anything else)."""
        data: spi.FieldData | None = None
        if valued:
            try:
                data = values.encode(path, value, declared)
            except Exception as error:
                raise mistake(path, error) from error
        extra: dict[str, spi.FieldData] = {}
        if notes:
            extra[f"{path}#undo"] = spi.FieldData.of([n.to_json() for n in notes], "undo")
            for note in notes:
                self.pending.append(self.event(spi.EventKind.UNDO_NOTED, node=path, handler=note.handler))
        completed = self.event(spi.EventKind.STEP_COMPLETED, step_name=path)
        if at_once or (data is not None and path in self.fields):
            # a race arm sharing the name may have written first: the store's answer says whose stands
            outcome = await self.progress(path, data, completed, extra=extra)
            if data is not None and outcome is spi.ProgressOutcome.ALREADY_RECORDED:
                data = self.fields.get(path) or data
        else:
            await self.defer(path, data, completed, extra)
        self.completed.add(path)
        return None if data is None else values.decode(data, declared)

    def defer_completion(self, path: str) -> None:
        """A step's completion is only an event: it rides on whatever write comes next (the next node's
        start, a wait row, the attempt's end), and is flushed at the latest before another body runs. A
        crash in between re-runs the step, exactly as a crash between its body and its own write would."""
        self.pending.append(self.event(spi.EventKind.STEP_COMPLETED, step_name=path))
        self.completed.add(path)
        self.unflushed = True

    def note_handlers(self, path: str, knobs: Knobs, compensate: Body | None, scope: Scope) -> None:
        """Note a completed (or replayed) node's undos, then its compensate= handler, which gets the ctx
        as it stands now (built only then: most nodes have no handler, and a ctx copies the scope)."""
        undo = self.fields.get(f"{path}#undo")
        if undo is not None:
            self.handlers.extend(compensation.undo_handlers(path, undo, knobs))
        if compensate is not None:
            args = (self.context(scope, path),)
            self.handlers.append(compensation.Handler(path, path, knobs, body=compensate, args=args))

    def read(self, path: str, declared: Any) -> Any:
        """A recorded value, decoded as the running version declares it. One that no longer decodes was
        recorded for another question (F0102: a resume onto an incompatible version)."""
        try:
            return values.decode(self.fields[path], declared)
        except Exception as error:
            raise StopFor(
                "F0102",
                path,
                f"the recorded value no longer decodes as {values.type_tag(declared)}: {error}",
                describe(error),
            ) from error

    # ---------------------------------------------------------------------------------- the walk

    async def walk(self, items: Sequence[nodes.Node], scope: Scope) -> None:
        for node in items:
            await self.visit(node, scope)

    async def visit(self, node: nodes.Node, scope: Scope) -> None:
        match node:
            case nodes.Input():
                await self.visit_input(node, scope)
            case nodes.Output():
                await self.visit_output(node, scope)
            case nodes.Step():
                await self.visit_step(node, scope)
            case nodes.Sleep():
                await self.visit_sleep(node, scope)
            case nodes.Dispatch():
                await self.visit_dispatch(node, scope)
            case nodes.Loop():
                await self.visit_loop(node, scope)
            case nodes.LoopOn():
                await self.visit_loop_on(node, scope)
            case nodes.ForEach():
                await self.visit_foreach(node, scope)
            case nodes.Subflow():
                await self.visit_subflow(node, scope)
            case nodes.Parallel():
                await self.visit_parallel(node, scope)
            case _:
                raise TypeError(f"not a node: {node!r}")

    async def visit_input(self, node: nodes.Input, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            self.keep(path)
            if path in self.waits and path not in self.discharged and not self.dry:
                # consumed: the row goes when the attempt ends; the event rides on the next write
                self.discharged.add(path)
                self.pending.append(self.event(spi.EventKind.INPUT_DISCHARGED, input_name=path))
            return
        reason = self.heard_cancel()
        if reason is not None and node.on_cancel is not None:
            heard = self.event(spi.EventKind.INPUT_DISCHARGED, input_name=path, reason=reason)
            scope.values[node.name] = await self.hear_cancel(node.on_cancel, node.type, path, scope, heard)
            return
        self.guard(path)
        if path not in self.waits:
            await self.wait(
                path, spi.WakeOnField(path), self.event(spi.EventKind.INPUT_WAITING, input_name=path)
            )
        raise Parked({path})

    async def hear_cancel(
        self, on_cancel: Body, declared: Any, path: str, scope: Scope, event: spi.Event
    ) -> Any:
        """A listening wait hears the cancel: `on_cancel(ctx, reason)` becomes the node's value, and the
        request is withdrawn in the same write (the flow goes on its own way)."""
        reason = self.claimed.cancel_reason if self.claimed is not None else ""
        try:
            value = await self.pure(on_cancel, self.context(scope, path), reason)
            data = values.encode(path, value, declared)
        except _PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error
        await self.progress(path, data, event, clear_cancel=True)
        self.completed.add(path)
        return values.decode(data, declared)

    async def visit_output(self, node: nodes.Output, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path not in self.fields:
            result, notes = await self.execute(path, node.knobs, scope, lambda ctx: self.call(node.body, ctx))
            at_once = node.knobs.at_most_once
            scope.values[node.name] = await self.record(path, result, node.type, notes, at_once=at_once)
        else:
            scope.values[node.name] = self.read(path, node.type)
            self.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_step(self, node: nodes.Step, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path not in self.completed:
            _, notes = await self.execute(path, node.knobs, scope, lambda ctx: self.call(node.body, ctx))
            if notes or node.knobs.at_most_once:
                await self.record(path, None, None, notes, valued=False, at_once=node.knobs.at_most_once)
            else:
                self.defer_completion(path)
        else:
            self.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_sleep(self, node: nodes.Sleep, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path in self.fields:  # a cancellation heard here became its value
            scope.values[node.name] = self.read(path, None)
            self.keep(path)
            return
        if node.duration <= timedelta(0):
            return
        reason = self.heard_cancel()
        if path not in self.completed and reason is not None and node.on_cancel is not None:
            heard = self.event(spi.EventKind.SLEEP_COMPLETED, step_name=path, reason=reason)
            scope.values[node.name] = await self.hear_cancel(node.on_cancel, None, path, scope, heard)
            return
        await self.sleep(path, node.duration)

    async def sleep(self, path: str, duration: timedelta) -> None:
        """A durable wait: skipped once completed; woken (its row satisfied) it completes, the event
        riding on the next write; otherwise a put-if-absent row keeps the first deadline, and we park."""
        if path in self.completed:
            self.keep(path)
            return
        if duration <= timedelta(0):
            return
        row = self.waits.get(path)
        due = isinstance(row, spi.WakeAt) and self.dry and self.clock.now() >= row.at
        if due or (path in self.satisfied and isinstance(row, spi.WakeAt)):
            if not self.dry:
                self.pending.append(self.event(spi.EventKind.SLEEP_COMPLETED, step_name=path))
            self.completed.add(path)
            self.keep(path)
            return
        self.guard(path)
        if path not in self.waits:
            # a sleep started by an earlier attempt whose row was since retired (a stop) keeps its first
            # deadline; one already past is satisfied at the next claim
            until = self.sleep_until.get(path) or self.clock.now() + duration
            started = self.event(spi.EventKind.SLEEP_STARTED, step_name=path, until=until.isoformat())
            await self.wait(path, spi.WakeAt(until), started)
        raise Parked({path})

    async def visit_dispatch(self, node: nodes.Dispatch, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        arms = (*node.branches, *((node.default,) if node.default is not None else ()))
        chosen_path = f"{path}#chosen"
        recorded = self.fields.get(chosen_path)
        if self.dry and recorded is not None:
            now = await self.choose(arms, scope, path)
            if now.name != values.decode(recorded):
                raise Question(path, f"the record chose branch {values.decode(recorded)!r}, now {now.name!r}")
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            self.keep(path)
        else:
            if recorded is not None:
                name = values.decode(recorded)
                arm = next((a for a in arms if a.name == name), None)
                if arm is None:
                    raise StopFor("F0102", path, f"the recorded branch {name!r} no longer exists")
                self.keep(chosen_path)
            else:
                arm = await self.choose(arms, scope, path)
                self.guard(path)
                chosen = self.event(spi.EventKind.BRANCH_CHOSEN, dispatch_name=path, branch_name=arm.name)
                await self.defer(chosen_path, values.encode(chosen_path, arm.name), chosen)
            result, notes = await self.execute(path, node.knobs, scope, lambda ctx: self.call(arm.body, ctx))
            at_once = node.knobs.at_most_once
            scope.values[node.name] = await self.record(path, result, node.type, notes, at_once=at_once)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def choose(self, arms: Sequence[nodes.Branch], scope: Scope, path: str) -> nodes.Branch:
        """The first arm whose condition holds (the default has none): a pure part, outside the guard."""
        ctx = self.context(scope, path)
        for arm in arms:
            if arm.condition is None:
                return arm
            try:
                holds = await self.pure(arm.condition, ctx)
            except _PASS_THROUGH:
                raise
            except Exception as error:
                raise mistake(path, error) from error
            if holds:
                return arm
        raise StopFor("F0001", path, "no branch of the dispatch applies and it has no default")

    async def visit_loop(self, node: nodes.Loop, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        if path in self.fields:
            scope.values[node.name] = self.read(path, node.type)
            self.keep(path)
        else:
            stateful = node.initial is not NO_STATE
            state = node.initial
            notes: list[Any] = []
            first = True
            while True:

                async def iteration(ctx: Context, state: Any = state) -> Any:
                    return await (self.call(node.body, state, ctx) if stateful else self.call(node.body, ctx))

                result, _ = await self.execute(path, node.knobs, scope, iteration, notes, announce=first)
                first = False
                if isinstance(result, LoopDone):
                    break
                if not isinstance(result, LoopAgain):
                    error = TypeError(f"loop {path!r}: the body must answer Loop.done(v) or Loop.again(...)")
                    raise mistake(path, error)
                state = result.state if stateful else state
            at_once = node.knobs.at_most_once
            scope.values[node.name] = await self.record(path, result.value, node.type, notes, at_once=at_once)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_loop_on(self, node: nodes.LoopOn, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        stateful = node.initial is not NO_STATE
        declared_state = state_type(node.initial)
        state = node.initial
        i = 0
        while path not in self.fields:
            checkpoint = f"{path}#{i}"
            if checkpoint in self.fields:
                state = self.read(checkpoint, declared_state) if stateful else state
                self.keep(checkpoint)
            else:

                async def iteration(ctx: Context, state: Any = state) -> Any:
                    return await (self.call(node.body, state, ctx) if stateful else self.call(node.body, ctx))

                result, notes = await self.execute(checkpoint, node.knobs, scope, iteration)
                if isinstance(result, LoopDone):
                    scope.values[node.name] = await self.record(path, result.value, node.type, notes)
                    break
                if not isinstance(result, LoopAgain):
                    error = TypeError(
                        f"loop_on {path!r}: the body must answer Loop.done(v) or Loop.again(...)"
                    )
                    raise mistake(checkpoint, error)
                recorded = await self.record(
                    checkpoint, result.state if stateful else None, declared_state, notes
                )
                state = recorded if stateful else state
            self.handlers.extend(
                compensation.undo_handlers(checkpoint, self.fields.get(f"{checkpoint}#undo"), node.knobs)
            )
            delay = node.schedule.delay(i)
            if delay is None:
                error = FlowLoopExhausted(f"loop_on {path!r} ran out of schedule after {i + 1} iterations")
                if not self.dry:
                    self.pending.append(self.failed_event(path, error))
                raise error
            await self.sleep(f"{path}##{i}", delay)
            i += 1
        else:
            scope.values[node.name] = self.read(path, node.type)
            self.keep(path)
        self.note_handlers(path, node.knobs, node.compensate, scope)

    async def visit_foreach(self, node: nodes.ForEach, scope: Scope) -> None:
        path = qualify(scope.prefix, node.name)
        done = path in self.fields
        has_undos = any(p.startswith(f"{path}~") and p.endswith("#undo") for p in self.fields)
        if done and node.compensate is None and not has_undos and not self.dry:
            scope.values[node.name] = self.read(path, list_type(node.type))
            self.keep(path)
            return
        items = await self.collection(node, scope, path)
        count_path = f"{path}~count"
        recorded = self.fields.get(count_path)
        if recorded is not None and values.decode(recorded) != len(items):
            if self.dry:
                raise Question(path, f"the record has {values.decode(recorded)} items, now {len(items)}")
            error = FlowNondeterministicCollection(path, values.decode(recorded), len(items))
            self.pending.append(self.failed_event(path, error))
            raise error
        if done:
            scope.values[node.name] = self.read(path, list_type(node.type))
            self.keep(path)
            for i, item in enumerate(items):
                self.note_item(node, path, i, item, self.read(f"{path}~{i}", node.type))
            return
        if recorded is None and not self.dry:
            self.pending_fields[count_path] = spi.FieldData.of(len(items), "int")  # rides on the first write
        results: list[Any] = [None] * len(items)
        bound = asyncio.Semaphore(node.concurrency or max(len(items), 1))
        failed: list[int] = []

        async def one(i: int, item: Any) -> None:
            item_path = f"{path}~{i}"
            if item_path in self.fields:
                results[i] = self.read(item_path, node.type)
                self.keep(item_path)
            else:
                async with bound:
                    if failed:  # a sibling failed while this item queued: start nothing new
                        raise asyncio.CancelledError
                    try:
                        result, notes = await self.execute(
                            item_path, node.knobs, scope, lambda ctx: self.call(node.body, item, ctx)
                        )
                        at_once = node.knobs.at_most_once
                        results[i] = await self.record(item_path, result, node.type, notes, at_once=at_once)
                    except BaseException:
                        failed.append(i)
                        raise
            self.note_item(node, path, i, item, results[i])

        jobs = [lambda i=i, item=item: one(i, item) for i, item in enumerate(items)]
        await self.join(jobs)
        scope.values[node.name] = await self.record(path, results, list_type(node.type), ())

    async def collection(self, node: nodes.ForEach, scope: Scope, path: str) -> list[Any]:
        try:
            return list(await self.pure(node.items, self.context(scope, path)))
        except _PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(path, error) from error

    def note_item(self, node: nodes.ForEach, path: str, i: int, item: Any, value: Any) -> None:
        item_path = f"{path}~{i}"
        self.handlers.extend(
            compensation.undo_handlers(item_path, self.fields.get(f"{item_path}#undo"), node.knobs)
        )
        if node.compensate is not None:
            self.handlers.append(
                compensation.Handler(
                    item_path, item_path, node.knobs, body=node.compensate, args=(item, value)
                )
            )

    async def visit_subflow(self, node: nodes.Subflow, scope: Scope) -> None:
        prefix = qualify(scope.prefix, node.name)
        inputs = child_inputs(node.child)
        owed = [i for i in inputs if qualify(prefix, i.name) not in self.fields]
        if owed or self.dry:
            mapped = await self.mapped(node, scope, prefix)
            if self.dry:
                self.compare_inputs(inputs, mapped, prefix)
            supplied: dict[str, spi.FieldData] = {}
            for child_input in owed:
                if child_input.name in mapped:
                    input_path = qualify(prefix, child_input.name)
                    try:
                        supplied[input_path] = values.encode(
                            input_path, mapped[child_input.name], child_input.type
                        )
                    except Exception as error:
                        raise mistake(input_path, error) from error
            if supplied and self.dry:
                self.fields.update(supplied)
                self.virtual.update(supplied)
            elif supplied:
                self.guard(prefix)
                *first, (last, data) = supplied.items()
                self.pending.extend(self.event(spi.EventKind.INPUT_SUPPLIED, input_name=p) for p, _ in first)
                extra = dict(first)
                await self.defer(last, data, self.event(spi.EventKind.INPUT_SUPPLIED, input_name=last), extra)
                self.completed.update(supplied)
        child = Scope(prefix)
        await self.walk(node.child.nodes, child)
        scope.values[node.name] = values.Record(child.values)

    async def mapped(self, node: nodes.Subflow, scope: Scope, prefix: str) -> Mapping[str, Any]:
        try:
            result = await self.pure(node.mapper, self.context(scope, prefix))
        except _PASS_THROUGH:
            raise
        except Exception as error:
            raise mistake(prefix, error) from error
        if isinstance(result, values.Record):
            return dict(result._asdict())
        if not isinstance(result, Mapping):
            raise mistake(
                prefix, TypeError(f"subflow {prefix!r}: the mapper must answer a dict, got {result!r}")
            )
        return result

    def compare_inputs(self, inputs: Sequence[nodes.Input], mapped: Mapping[str, Any], prefix: str) -> None:
        """Dry run: a recorded child input is the question the child was asked; the mapper must ask it
        again the same way."""
        for child_input in inputs:
            input_path = qualify(prefix, child_input.name)
            recorded = self.fields.get(input_path)
            if recorded is None or child_input.name not in mapped:
                continue
            try:
                now = values.round_trip(input_path, mapped[child_input.name], child_input.type)
            except Exception:
                now = mapped[child_input.name]
            was = values.decode(recorded, child_input.type)
            if now != was:
                raise Question(input_path, f"the child was given {was!r}, now {now!r}")

    # ----------------------------------------------------------------------------------- parallel

    async def visit_parallel(self, node: nodes.Parallel, scope: Scope) -> None:
        scopes = [scope.child() for _ in node.branches]
        jobs = [lambda b=b, s=s: self.walk(b.nodes, s) for b, s in zip(node.branches, scopes, strict=True)]
        if node.kind == "race":
            winner = await self.race(jobs)
            scope.values.update(scopes[winner].values)
        else:
            await self.join(jobs)
            for branch_scope in scopes:
                scope.values.update(branch_scope.values)

    async def join(self, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
        """Every job must finish. The first failure decides at once (the rest are cancelled); parks
        merge, so the attempt waits on every branch's rows."""
        if self.dry:
            for job in jobs:
                await job()
            return
        parks: set[str] = set()
        self.forks += 1
        tasks = [asyncio.ensure_future(job()) for job in jobs]
        waiting = set(tasks)
        try:
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=tasks.index):
                    if task.cancelled():  # an item that gave way to a failed sibling
                        continue
                    error = task.exception()
                    if isinstance(error, Parked):
                        parks |= error.paths
                    elif error is not None:
                        raise error
        finally:
            await _cancel(waiting)
            await self.drain()
        if parks:
            raise Parked(parks)

    async def race(self, jobs: Sequence[Callable[[], Awaitable[None]]]) -> int:
        """The first job to produce a value wins (the others are cancelled; their rows are retired when the
        attempt ends). None did: any park → the merged parks; all failed → the last failure."""
        if self.dry:
            halted: Halt | None = None
            for index, job in enumerate(jobs):
                try:
                    await job()
                    return index
                except Halt as halt:
                    halted = halted or halt
            assert halted is not None
            raise halted
        parks: set[str] = set()
        failures: list[BaseException] = []
        self.forks += 1
        tasks = [asyncio.ensure_future(job()) for job in jobs]
        waiting = set(tasks)
        try:
            while waiting:
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=tasks.index):
                    error = task.exception()
                    if error is None:
                        return tasks.index(task)
                    if isinstance(error, Parked):
                        parks |= error.paths
                    elif isinstance(error, ClaimLost | StopFor | spi.FlowStoreError):
                        raise error
                    else:
                        failures.append(error)
        finally:
            await _cancel(waiting)
            await self.drain()
            # A branch that ended in the same turn as the winner is never looked at above; read its
            # outcome so asyncio does not report it as an exception nobody retrieved.
            for task in tasks:
                _swallow(task)
        if parks:
            raise Parked(parks)
        raise failures[-1]


async def _cancel(tasks: Iterable[asyncio.Future[Any]]) -> None:
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


def _swallow(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


# ------------------------------------------------------------------------------------- the attempt


async def run_attempt(
    flow: Flow,
    claimed: spi.Claimed,
    *,
    store: spi.FlowStore,
    clock: Clock,
    executor_id: str,
    runner: Runner | None = None,
) -> AttemptReport:
    """Perform one whole attempt at a claimed execution, ending it with `claimed.finish(...)`.

    Writes ExecutionClaimed and ExecutionResumed (with the first write, not on their own), replays the
    flow, and ends Terminal / Suspended / Stop. A FlowStoreError propagates with nothing decided; so does
    asyncio.CancelledError (the worker cancels the task when its claim is lost).
    """
    state = claimed.state
    eid = state.execution_id
    if state.status.terminal or isinstance(state.status, spi.Stopped):
        return AttemptReport(eid, "no-work", state.status.show())
    ledger = await claimed.prefetched_ledger()
    if ledger is None:  # the record is read once per attempt, here
        ledger = (await store.get_all_fields(eid), (await store.get_history(eid)).events)
    fields, history = ledger
    run = Attempt(
        flow,
        execution_id=eid,
        status=state.status,
        fields=fields,
        history=history,
        clock=clock,
        claimed=claimed,
        executor_id=executor_id,
        waits=state.waits,
        satisfied=claimed.satisfied,
    )
    run.pending += [
        run.event(spi.EventKind.EXECUTION_CLAIMED, executor_id=executor_id),
        run.event(spi.EventKind.EXECUTION_RESUMED, executor_id=executor_id),
    ]
    try:
        ended = await (runner(lambda: _end(run)) if runner is not None else _end(run))
        return _report(run, *ended)
    except ClaimLost as lost:
        return AttemptReport(eid, "claim-lost", str(lost))


async def _end(run: Attempt) -> tuple[spi.ClaimOutcome, spi.StatusOutcome]:
    """Walk, then end the attempt with the verdict. The store refuses a Completed ending while a cancel
    request is outstanding (decided in the ending's own write): one that landed after the last node's
    start is heard there, and the attempt unwinds as Compensating(Cancellation) and ends Cancelled."""
    outcome = await _verdict(run)
    answer = await run.finish(outcome)
    if answer is spi.StatusOutcome.CANCEL_REQUESTED:
        outcome = await _unwind(run, spi.Cancellation(run._claim().cancel_reason))
        answer = await run.finish(outcome)
    return outcome, answer


async def _verdict(run: Attempt) -> spi.ClaimOutcome:
    """Walk the flow and classify how the walk ended (spec §5.7, DESIGN §3)."""
    try:
        await run.walk(run.flow.nodes, Scope(""))
        if run.resume_cause is not None:  # the walk reached the end: the unwind is still forced
            raise ResumedUnwind(run.resume_cause)
        return spi.Terminal(spi.Completed(), run.event(spi.EventKind.COMPLETED))
    except Parked as parked:
        return spi.Suspended(parked.paths)
    except StopFor as stop:
        return _stop(run, stop)
    except (
        ResumedUnwind,
        FlowCancelled,
        FlowDomainError,
        FlowLoopExhausted,
        FlowNondeterministicCollection,
    ) as error:
        return await _unwind(run, run.resume_cause or _cause(error))  # a resumed unwind keeps its verdict
    except (ClaimLost, spi.FlowStoreError):
        raise
    except Exception as error:  # a flaw outside any node's body: still a mistake for a person, not a crash
        return _stop(run, mistake("", error))


async def _unwind(run: Attempt, cause: spi.Cause) -> spi.ClaimOutcome:
    try:
        return await compensation.unwind(run, cause)
    except Parked as parked:  # a compensation's retry waits in a durable row; the unwind resumes later
        return spi.Suspended(parked.paths)
    except StopFor as stop:
        return _stop(run, stop)


def _stop(run: Attempt, stop: StopFor) -> spi.Stop:
    stopped = stop.stopped
    if (
        run.resume_cause is not None and stopped.cause is None
    ):  # stopped inside an unwind: resume continues it
        stopped = dataclasses.replace(stopped, cause=run.resume_cause)
    event = run.event(spi.EventKind.STOPPED, code=stopped.code, node=stopped.node, reason=stopped.reason)
    return spi.Stop(stopped, event)


def _cause(error: BaseException) -> spi.Cause:
    if isinstance(error, ResumedUnwind):
        return error.cause
    if isinstance(error, FlowCancelled):
        return spi.Cancellation(error.reason)
    return spi.Failure(str(error), type(error).__name__)


_OUTCOME_NAMES: dict[type, str] = {
    spi.Completed: "completed",
    spi.Failed: "failed",
    spi.Cancelled: "cancelled",
}


def _report(run: Attempt, outcome: spi.ClaimOutcome, answer: spi.StatusOutcome) -> AttemptReport:
    eid = run.execution_id
    if answer is spi.StatusOutcome.CLAIM_LOST:
        return AttemptReport(eid, "claim-lost", "the claim lapsed before the attempt could end")
    if answer in (spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL, spi.StatusOutcome.CANCEL_REQUESTED):
        return AttemptReport(eid, "no-work", "the execution ended under this attempt")
    match outcome:
        case spi.Terminal(status, _):
            detail = status.show() if not isinstance(status, spi.Failed) else f"{status.kind}: {status.error}"
            return AttemptReport(eid, _OUTCOME_NAMES[type(status)], detail)
        case spi.Suspended(paths):
            return AttemptReport(eid, "suspended", ", ".join(sorted(paths)))
        case spi.Stop(stopped, _):
            return AttemptReport(eid, "stopped", f"{stopped.code} at {stopped.node}: {stopped.reason}")
    raise TypeError(f"not an outcome: {outcome!r}")


# ------------------------------------------------------------------------------------------ records


def assemble_record(flow: Flow, fields: Mapping[str, spi.FieldData]) -> values.Record:
    """The record of a finished (or partial) execution, as `run_local` answers it: every valued node by
    name, a subflow's record nested under the subflow's name."""
    return values.Record(_assemble(flow.nodes, "", fields))


def _assemble(
    items: Sequence[nodes.Node], prefix: str, fields: Mapping[str, spi.FieldData]
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for node in items:
        match node:
            case nodes.Parallel():
                for branch in node.branches:
                    record.update(_assemble(branch.nodes, prefix, fields))
                continue
            case nodes.Subflow():
                child = qualify(prefix, node.name)
                record[node.name] = values.Record(_assemble(node.child.nodes, child, fields))
                continue
            case nodes.Step():
                continue
            case nodes.ForEach():
                declared = list_type(node.type)
            case nodes.Sleep():
                declared = None
            case _:
                declared = node.type
        data = fields.get(qualify(prefix, node.name))
        if data is not None:
            record[node.name] = values.decode(data, declared)
    return record
