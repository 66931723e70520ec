"""The unwind: compensations and undos, run last-noted first, each recorded as it completes.

Handlers are noted as nodes complete (or as a replay finds them recorded): a node's `ctx.undo` notes first,
in the order its body made them, then its `compensate=` handler. They form one list; the unwind walks it
backwards, so a subflow's children, noted after the parent's earlier nodes, are undone before them.

Each handler's completion is a valueless progress mark at `<name>#compensated` with NodeCompensated, so an
unwind interrupted half way (a crash, a lost claim, a stop) resumes with only the handlers not yet marked.
A handler that keeps failing after its retries stops the execution (F0002) with the unwind's cause kept on
the Stopped status, so that a resume continues the unwind instead of running the flow forward.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from flowdeck.engine import bodies
from flowdeck.engine.context import UndoNote, resolve_handler
from flowdeck.engine.nodes import Body, Knobs
from flowdeck.engine.outcomes import StopFor, describe
from flowdeck.engine.schedule import Schedule
from flowdeck.store import spi

__all__ = ["Books", "Handler", "Retrier", "compensate_knobs", "terminal_status", "undo_handlers", "unwind"]

# "3 immediate tries" for a handler whose node declares no retry schedule
_IMMEDIATE = Schedule.fixed(timedelta(0)).take(2)


class Books(Protocol):
    """What the unwind reads and writes of the attempt's record (the interpreter's recorder)."""

    status: spi.Status
    compensated: set[str]

    def event(self, kind: spi.EventKind, **data: Any) -> spi.Event: ...

    def note(self, event: spi.Event) -> None: ...

    async def set_status(self, status: spi.Status, event: spi.Event) -> None: ...

    async def progress(
        self, path: str, value: spi.FieldData | None, event: spi.Event
    ) -> spi.ProgressOutcome: ...


class Retrier(Protocol):
    """How the unwind runs a handler: under a schedule (the interpreter's body runner)."""

    async def with_retry(
        self,
        path: str,
        knobs: Knobs,
        once: Callable[[int], Awaitable[Any]],
        *,
        retry_any: bool = False,
        exhausted: Callable[[BaseException], BaseException] | None = None,
    ) -> Any: ...


@dataclass(frozen=True)
class Handler:
    """One compensation: `name` is the durable name its completion is marked under; `node` the node it
    belongs to. Either a `compensate=` body with the arguments to call it with, or an undo note."""

    name: str
    node: str
    knobs: Knobs
    body: Body | None = None
    args: tuple[Any, ...] = ()
    note: UndoNote | None = None

    async def run(self, call: Callable[..., Awaitable[Any]]) -> None:
        if self.note is not None:
            await call(Body.of(resolve_handler(self.note.handler)), self.note.arg)
        elif self.body is not None:
            await call(self.body, *self.args)


def undo_handlers(path: str, field: spi.FieldData | None, knobs: Knobs) -> list[Handler]:
    """The handlers for the undo notes recorded with node `path`'s result (at `path#undo`)."""
    if field is None:
        return []
    notes = [UndoNote.from_json(n) for n in json.loads(field.value)]
    return [Handler(f"{path}#undo{k}", path, knobs, note=note) for k, note in enumerate(notes)]


def compensate_knobs(knobs: Knobs) -> Knobs:
    """A handler retries under its node's schedule, or three immediate tries when there is none."""
    return Knobs(retry=knobs.retry or _IMMEDIATE)


def terminal_status(cause: spi.Cause) -> spi.Status:
    """The end an unwind reaches is a total function of its cause."""
    if isinstance(cause, spi.Cancellation):
        return spi.Cancelled(cause.reason)
    return spi.Failed(cause.error, cause.kind)


def terminal_event(books: Books, cause: spi.Cause) -> spi.Event:
    if isinstance(cause, spi.Cancellation):
        return books.event(spi.EventKind.CANCELLED, reason=cause.reason)
    return books.event(spi.EventKind.FAILED, error=cause.error, error_kind=cause.kind)


async def unwind(
    books: Books, retrier: Retrier, handlers: Sequence[Handler], cause: spi.Cause
) -> spi.Terminal:
    """Run every handler not yet marked compensated, newest first; answer the terminal outcome.

    Raises what the interpreter turns into other outcomes: a stop (F0002) when a handler keeps failing,
    Parked when a handler's retry waits in a durable row, ClaimLost, FlowStoreError.
    """
    latest: dict[str, Handler] = {}
    for handler in handlers:
        latest.pop(handler.name, None)
        latest[handler.name] = handler  # a race's arms may note one name twice: the last noting counts
    todo = [h for h in reversed(latest.values()) if h.name not in books.compensated]
    if latest:
        if not isinstance(books.status, spi.Compensating):
            started = books.event(spi.EventKind.COMPENSATION_STARTED, cause=spi.cause_to_json(cause))
            await books.set_status(spi.Compensating(cause), started)
        for handler in todo:
            await _compensate(books, retrier, handler, cause)
        books.note(books.event(spi.EventKind.COMPENSATION_COMPLETED))
    return spi.Terminal(terminal_status(cause), terminal_event(books, cause))


async def _compensate(books: Books, retrier: Retrier, handler: Handler, cause: spi.Cause) -> None:
    def exhausted(error: BaseException) -> BaseException:
        books.note(books.event(spi.EventKind.COMPENSATION_FAILED, error=str(error), node_name=handler.name))
        return StopFor(
            "F0002",
            handler.name,
            f"the compensation {handler.name!r} kept failing: {error}",
            describe(error),
            cause,
        )

    async def once(attempt: int) -> None:
        await handler.run(bodies.call)

    await retrier.with_retry(
        handler.name, compensate_knobs(handler.knobs), once, retry_any=True, exhausted=exhausted
    )
    mark = books.event(spi.EventKind.NODE_COMPENSATED, node_name=handler.name)
    await books.progress(f"{handler.name}#compensated", None, mark)
    books.compensated.add(handler.name)
