"""What an attempt knows of its record, and how it adds to it: the recorder the walker is handed.

A recorder holds the record read once at the attempt's start (fields, and what history says: `Ledger`),
the events and fields pending for the next write, and the node boundaries' decisions (the guard, a heard
cancel, a woken sleep). There are two: `RealRecorder` writes through the attempt's claim, and the dry run's
(`flowdeck.engine.dry_run.DryRecorder`) never writes and stops at the first node that would work. Which one an
attempt has is decided once, where it is built; the walker never asks.

Every write takes the pending events (and pending fields) with it, in one transaction. A node's record
(value, undo notes, completion) does not go out on its own: it waits in `deferred` and rides on the next
write, which before a body is the one that records that body's start. So a start is durable BEFORE its body
runs, and the cancel flag that very write answers decides whether the body runs at all (a request recorded
after it is seen by the next node's start, or refuses the Completed ending).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from flowdeck.engine import forks, nodes, traversal, values
from flowdeck.engine.config import Transient, never
from flowdeck.engine.errors import FlowCancelled, FlowDomainError, FlowNondeterministicCollection
from flowdeck.engine.ledger import Ledger
from flowdeck.engine.outcomes import ClaimLost, Question, ResumedUnwind, mistake
from flowdeck.store import spi
from flowdeck.store.clock import Clock

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow
    from flowdeck.engine.rate_limits import Tokens

__all__ = ["Deferred", "Ledger", "RealRecorder", "Recorder", "listens"]  # Ledger: re-exported

Jobs = Sequence[Callable[[], Awaitable[None]]]


def listens(flow: Flow) -> bool:
    """Whether the flow listens for cancellation (an `on_cancel` on some wait)."""
    return any(
        isinstance(place.node, nodes.Input | nodes.Sleep) and place.node.on_cancel is not None
        for place in traversal.walk(flow)
    )


@dataclass(frozen=True)
class Deferred:
    """A node's record waiting for the attempt's next write: its path, value, extra fields (undo notes, a
    foreach's count) and the events up to its own completion, in order."""

    path: str
    value: spi.FieldData | None
    events: list[spi.Event]
    extra: dict[str, spi.FieldData]


class Recorder(abc.ABC):
    """The record as one attempt sees it, and the decisions at a node boundary. The methods the two
    recorders answer differently are the ones this base leaves to them."""

    reasks: ClassVar[bool] = False
    """Whether the walk asks a recorded node's question again (its pure parts: a dispatch's conditions, a
    subflow's mapper, a foreach's collection) to compare the answer with the record (`question_*`)."""

    def __init__(
        self,
        flow: Flow,
        *,
        execution_id: str,
        status: spi.Status,
        fields: Mapping[str, spi.FieldData],
        history: Iterable[spi.Event],
        clock: Clock,
        executor_id: str = "",
        waits: Mapping[str, spi.Wake] | None = None,
        satisfied: frozenset[str] = frozenset(),
    ) -> None:
        self.flow_name = flow.name
        self.execution_id = execution_id
        self.status = status
        self.fields = dict(fields)
        self.clock = clock
        self.executor_id = executor_id
        self.waits = dict(waits or {})
        self.satisfied = satisfied
        ledger = Ledger.of(history)
        self.completed = ledger.completed
        self.compensated = ledger.compensated
        self.retried = ledger.retried
        self.sleep_until = ledger.sleep_until
        self.spent_reservations = ledger.spent
        # started and never finished, as history left them (F0004 for an at-most-once node)
        self.unfinished = {p for p, k in ledger.last_step_event.items() if k is spi.EventKind.STEP_STARTED}
        # a node whose start this attempt's claim recorded already (interpreter.opening): its run writes none
        self.opened: str | None = None
        self.transient: Transient = never  # a body's exception the world caused (EngineConfig.transient)
        self.tokens: Tokens | None = None  # the rate limits' takes (none declared: a node using one stops)
        self.resume_cause = status.cause if isinstance(status, spi.Compensating) else None
        self.listening = listens(flow)
        self.pending: list[spi.Event] = []
        # a step's completion waiting in `pending` that must be durable before the next body runs
        self.unflushed = False
        self.pending_fields: dict[str, spi.FieldData] = {}
        self.deferred: Deferred | None = None  # a node's record riding on the next write
        self.discharged: set[str] = set()
        self.kept: list[str] = []  # recorded paths the walk took as kept (the dry run reports them)
        self.virtual: set[str] = set()  # dry run: values computed in memory, never recorded

    # ------------------------------------------------------------------------------------- events

    def event(self, kind: spi.EventKind, **data: Any) -> spi.Event:
        return spi.Event(kind, self.flow_name, self.execution_id, self.clock.now(), data)

    def started(self, path: str, token: datetime | None = None) -> spi.Event:
        if token is None:  # `token`: the slot of the rate limit's token the run spends (named in history)
            return self.event(spi.EventKind.STEP_STARTED, step_name=path, executor_id=self.executor_id)
        return self.event(
            spi.EventKind.STEP_STARTED, step_name=path, executor_id=self.executor_id, token=token.isoformat()
        )

    def failed_event(self, path: str, error: BaseException) -> spi.Event:
        kind = type(error).__name__ if isinstance(error, FlowDomainError) else None
        return self.event(spi.EventKind.STEP_FAILED, step_name=path, error=str(error), error_kind=kind)

    def keep(self, path: str) -> None:
        if path not in self.virtual:
            self.kept.append(path)

    # ---------------------------------------------------------------------------------- completions

    async def record(
        self,
        path: str,
        value: Any,
        declared: Any,
        notes: Sequence[Any],
        *,
        valued: bool = True,
        at_once: bool = False,
        told: Mapping[str, Any] | None = None,
    ) -> Any:
        """Record a node's completion (value, undo notes, events) with the attempt's next write; answer the
        value as the store gives it back. `at_once`: in a write of its own, now (an at-most-once node,
        whose completion must not wait for anything else). `told`: extra payload keys of its StepCompleted
        (a loop's `iterations`), durable in the history where no field keeps them."""
        data, events, extra = self.completion(path, value, declared, notes, valued=valued, told=told)
        *undone, completed = events
        self.pending.extend(undone)
        if at_once or (data is not None and path in self.fields):
            # a race arm sharing the name may have written first: the store's answer says whose stands
            outcome = await self.progress(path, data, completed, extra=extra)
            if data is not None and outcome is spi.ProgressOutcome.ALREADY_RECORDED:
                data = self.fields.get(path) or data
        else:
            await self.defer(path, data, completed, extra)
        self.completed.add(path)
        return None if data is None else values.decode(data, declared)

    def completion(
        self,
        path: str,
        value: Any,
        declared: Any,
        notes: Sequence[Any],
        *,
        valued: bool = True,
        told: Mapping[str, Any] | None = None,
    ) -> tuple[spi.FieldData | None, list[spi.Event], dict[str, spi.FieldData]]:
        """A node's record: its encoded value (None when not `valued`), its events (one UndoNoted per note,
        then its StepCompleted) and its extra fields (the undo notes)."""
        data: spi.FieldData | None = None
        if valued:
            try:
                data = values.encode(path, value, declared)
            except Exception as error:
                raise mistake(path, error) from error
        extra: dict[str, spi.FieldData] = {}
        events: list[spi.Event] = []
        if notes:
            extra[f"{path}#undo"] = spi.FieldData.of([n.to_json() for n in notes], "undo")
            events.extend(self.event(spi.EventKind.UNDO_NOTED, node=path, handler=n.handler) for n in notes)
        events.append(self.event(spi.EventKind.STEP_COMPLETED, **(told or {}), step_name=path))
        return data, events, extra

    def defer_completion(self, path: str) -> None:
        """A step's completion is only an event: it rides on whatever write comes next (the next node's
        start, a wait row, the attempt's end), and is flushed at the latest before another body runs. A
        crash in between re-runs the step, exactly as a crash between its body and its own write would."""
        self.pending.append(self.event(spi.EventKind.STEP_COMPLETED, step_name=path))
        self.completed.add(path)
        self.unflushed = True

    def question_choice(self, path: str, recorded: str, now: str) -> None:
        if now != recorded:
            raise Question(path, f"the record chose branch {recorded!r}, now {now!r}")

    def question_inputs(self, prefix: str, inputs: Sequence[Any], mapped: Mapping[str, Any]) -> None:
        """A recorded child input is the question the child was asked; the mapper must ask it again the
        same way."""
        for child_input in inputs:
            input_path = traversal.qualify(prefix, child_input.name)
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

    # ------------------------------------------------------------------ answered by each recorder

    @abc.abstractmethod
    def note(self, event: spi.Event) -> None:
        """An event for the next write."""

    @abc.abstractmethod
    def note_field(self, path: str, data: spi.FieldData) -> None:
        """A field for the next write (a foreach's count)."""

    @abc.abstractmethod
    def discharge(self, path: str) -> None:
        """A delivered input the walk consumed."""

    @abc.abstractmethod
    def woken(self, path: str, row: spi.Wake | None) -> bool:
        """Whether a sleep's row was satisfied for this attempt."""

    @abc.abstractmethod
    async def supply(self, prefix: str, supplied: Mapping[str, spi.FieldData]) -> None:
        """A subflow's child inputs, as its mapper gives them on entry."""

    @abc.abstractmethod
    def miscounted(self, path: str, recorded: int, now: int) -> BaseException:
        """What to raise when a foreach's collection has another count than the record's."""

    @abc.abstractmethod
    def guard(self, path: str) -> None:
        """A node boundary that does work: raise what stops the walk here, if anything."""

    @abc.abstractmethod
    def heard_cancel(self) -> str | None:
        """The reason of a cancel a listening wait should hear now, or None."""

    @abc.abstractmethod
    async def flush(self, start: spi.Event | None = None) -> None: ...

    @abc.abstractmethod
    async def defer(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        extra: Mapping[str, spi.FieldData] | None = None,
    ) -> None: ...

    @abc.abstractmethod
    async def progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        extra: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome: ...

    @abc.abstractmethod
    async def wait(self, path: str, wake: spi.Wake, event: spi.Event) -> None: ...

    @abc.abstractmethod
    async def atomically(
        self, path: str, body: Callable[[], Any], declared: Any, notes: Sequence[Any], *, valued: bool
    ) -> Any:
        """Run an atomic node's sync `body()` and record it (as `record` would) in one store transaction;
        answer its value as recorded."""

    @abc.abstractmethod
    def join(self, jobs: Jobs) -> Awaitable[None]:
        """Every job must finish (see `forks.join`)."""

    @abc.abstractmethod
    def race(self, jobs: Jobs) -> Awaitable[int]:
        """The index of the job that produced a value first (see `forks.race`)."""


class RealRecorder(Recorder):
    """Writes through the attempt's claim."""

    def __init__(
        self,
        flow: Flow,
        claimed: spi.Claimed,
        *,
        execution_id: str,
        status: spi.Status,
        fields: Mapping[str, spi.FieldData],
        history: Iterable[spi.Event],
        clock: Clock,
        executor_id: str = "",
        waits: Mapping[str, spi.Wake] | None = None,
        satisfied: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(
            flow,
            execution_id=execution_id,
            status=status,
            fields=fields,
            history=history,
            clock=clock,
            executor_id=executor_id,
            waits=waits,
            satisfied=satisfied,
        )
        self.claimed = claimed
        self.inflight: set[asyncio.Future[Any]] = set()  # a fork's writes in flight (see `_io`)
        self.broken: BaseException | None = None  # the first of them that failed
        self.forks = 0  # how many joins and races are running their branches side by side

    def note(self, event: spi.Event) -> None:
        """An event for the next write."""
        self.pending.append(event)

    def note_field(self, path: str, data: spi.FieldData) -> None:
        """A field for the next write (a foreach's count)."""
        self.pending_fields[path] = data

    def discharge(self, path: str) -> None:
        """A delivered input the walk consumed: its row goes when the attempt ends; the event rides on the
        next write."""
        if path in self.waits and path not in self.discharged:
            self.discharged.add(path)
            self.pending.append(self.event(spi.EventKind.INPUT_DISCHARGED, input_name=path))

    def woken(self, path: str, row: spi.Wake | None) -> bool:
        """Whether a sleep's row was satisfied for this attempt."""
        return path in self.satisfied and isinstance(row, spi.WakeAt)

    async def supply(self, prefix: str, supplied: Mapping[str, spi.FieldData]) -> None:
        """A subflow's child inputs, mapped on entry, recorded with the next write (the last one carries
        the others as extra fields)."""
        self.guard(prefix)
        *first, (last, data) = supplied.items()
        self.pending.extend(self.event(spi.EventKind.INPUT_SUPPLIED, input_name=p) for p, _ in first)
        extra = dict(first)
        await self.defer(last, data, self.event(spi.EventKind.INPUT_SUPPLIED, input_name=last), extra)
        self.completed.update(supplied)

    def miscounted(self, path: str, recorded: int, now: int) -> BaseException:
        """A foreach's collection has another count than the record's."""
        error = FlowNondeterministicCollection(path, recorded, now)
        self.pending.append(self.failed_event(path, error))
        return error

    def guard(self, path: str) -> None:
        """A resumed unwind raises its verdict; a cancel request (unless the flow listens at its waits)
        starts the unwind."""
        if self.resume_cause is not None:
            raise ResumedUnwind(self.resume_cause)
        claimed = self.claimed
        if claimed.cancel_requested and not self.listening:
            raise FlowCancelled(claimed.cancel_reason)

    def heard_cancel(self) -> str | None:
        if self.resume_cause is not None:
            return None
        return self.claimed.cancel_reason if self.claimed.cancel_requested else None

    # plain calls handing back the fork's coroutine: no frame of their own on the walk
    def join(self, jobs: Jobs) -> Awaitable[None]:
        return forks.join(self, jobs)

    def race(self, jobs: Jobs) -> Awaitable[int]:
        return forks.race(self, jobs)

    # ------------------------------------------------------------------------------------- writes

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
        claimed = self.claimed
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
        await self.settle()
        extra_fields = {**self.pending_fields, **(extra or {})}
        self.pending_fields = {}
        outcome = await self._io(
            self.claimed.record_progress(
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
        outcome = await self._io(self.claimed.record_wait(path, wake, event, preceding=self._take()))
        if outcome is spi.WriteOutcome.CLAIM_LOST:
            raise ClaimLost(path)
        self.waits.setdefault(path, wake)

    async def atomically(
        self, path: str, body: Callable[[], Any], declared: Any, notes: Sequence[Any], *, valued: bool
    ) -> Any:
        """What is pending rides first in the transaction; put back if the body fails, for the write that
        records the failure."""
        await self.settle()
        preceding = self._take()

        made: list[spi.Completion] = []

        def complete(result: Any) -> spi.Completion:  # on the store's thread, after the body
            data, events, extra = self.completion(path, result, declared, notes, valued=valued)
            made.append(spi.Completion(data, [*preceding, *events], extra or None))
            return made[-1]

        try:
            outcome, _ = await self._io(self.claimed.record_atomically(path, body, complete))
        except BaseException:
            self.pending[:0] = preceding
            raise
        if outcome is not spi.ProgressOutcome.RECORDED:  # rolled back, body and all
            self.pending[:0] = preceding
            raise ClaimLost(path)
        data = made[-1].value
        for name, extra in (made[-1].extra_fields or {}).items():
            self.fields.setdefault(name, extra)
        self.completed.add(path)
        self.waits.pop(path, None)
        if data is None:
            return None
        self.fields[path] = data
        return values.decode(data, declared)

    async def set_status(self, status: spi.Status, event: spi.Event) -> None:
        await self.settle()
        outcome = await self.claimed.update_status(status, event, preceding=self._take())
        if outcome is not spi.StatusOutcome.APPLIED:
            raise ClaimLost(status.show())
        self.status = status

    async def finish(self, outcome: spi.ClaimOutcome) -> spi.StatusOutcome:
        await self.settle()
        events = self._take()
        released = self.event(spi.EventKind.EXECUTION_RELEASED, executor_id=self.executor_id)
        answer = await self.claimed.finish(outcome, preceding=[*events, released])
        if answer is spi.StatusOutcome.CANCEL_REQUESTED:
            self.pending[:0] = events  # nothing was written: they ride on the unwind's first write
        return answer


_REFUSED = (spi.WriteOutcome.CLAIM_LOST, spi.ProgressOutcome.CLAIM_LOST)
"""A write's answer saying this attempt no longer holds the execution."""
