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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from engine.context import UndoNote, resolve_handler
from engine.nodes import Body, Knobs
from engine.schedule import Schedule
from store import spi

if TYPE_CHECKING:
    from engine.interpreter import Attempt

__all__ = ["Handler", "compensate_knobs", "terminal_status", "undo_handlers", "unwind"]

# "3 immediate tries" for a handler whose node declares no retry schedule
_IMMEDIATE = Schedule.fixed(timedelta(0)).take(2)


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


def terminal_event(run: Attempt, cause: spi.Cause) -> spi.Event:
    if isinstance(cause, spi.Cancellation):
        return run.event(spi.EventKind.CANCELLED, reason=cause.reason)
    return run.event(spi.EventKind.FAILED, error=cause.error, error_kind=cause.kind)


async def unwind(run: Attempt, cause: spi.Cause) -> spi.Terminal:
    """Run every handler not yet marked compensated, newest first; answer the terminal outcome.

    Raises what the interpreter turns into other outcomes: a stop (F0002) when a handler keeps failing,
    Parked when a handler's retry waits in a durable row, ClaimLost, FlowStoreError.
    """
    from engine import interpreter  # the unwind is a part of the interpreter; imported late, no cycle

    latest: dict[str, Handler] = {}
    for handler in run.handlers:
        latest.pop(handler.name, None)
        latest[handler.name] = handler  # a race's arms may note one name twice: the last noting counts
    todo = [h for h in reversed(latest.values()) if h.name not in run.compensated]
    if latest:
        if not isinstance(run.status, spi.Compensating):
            started = run.event(spi.EventKind.COMPENSATION_STARTED, cause=spi.cause_to_json(cause))
            await run.set_status(spi.Compensating(cause), started)
        for handler in todo:
            await _compensate(run, handler, cause, interpreter)
        run.pending.append(run.event(spi.EventKind.COMPENSATION_COMPLETED))
    return spi.Terminal(terminal_status(cause), terminal_event(run, cause))


async def _compensate(run: Attempt, handler: Handler, cause: spi.Cause, interpreter: Any) -> None:
    def exhausted(error: BaseException) -> BaseException:
        run.pending.append(
            run.event(spi.EventKind.COMPENSATION_FAILED, error=str(error), node_name=handler.name)
        )
        return interpreter.StopFor(
            "F0002",
            handler.name,
            f"the compensation {handler.name!r} kept failing: {error}",
            interpreter.describe(error),
            cause,
        )

    async def once(attempt: int) -> None:
        await handler.run(run.call)

    await run.with_retry(
        handler.name, compensate_knobs(handler.knobs), once, retry_any=True, exhausted=exhausted
    )
    mark = run.event(spi.EventKind.NODE_COMPENSATED, node_name=handler.name)
    await run.progress(f"{handler.name}#compensated", None, mark)
    run.compensated.add(handler.name)
