"""The dry run behind `resume`: replay a new version of a flow against an execution's record, in memory.

It walks the new version as an attempt would, skipping every node whose record it finds, and stops at the
first node that would run a body (or wait). It runs no body and writes nothing. The pure parts of the nodes
it passes are re-evaluated and compared to the record, because they are the question a node was asked: a
subflow's mapped child inputs, a foreach's collection (its count), the branch a dispatch's conditions
choose. A different answer is F0102. A recorded durable key that no node of the new version owns is F0101.

It is the interpreter's own walker (engine/walker.py) handed the `DryRecorder` below instead of the real
one: everything the dry run does differently is in that recorder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flowdeck.engine import schema
from flowdeck.engine.errors import FlowExecutionNotFound
from flowdeck.engine.flow import Flow
from flowdeck.engine.outcomes import Halt, Parked, Question, StopFor
from flowdeck.engine.recorder import Recorder
from flowdeck.engine.walker import Scope, Walker
from flowdeck.store import spi
from flowdeck.store.clock import Clock

__all__ = ["Conflict", "DryRecorder", "ResumeReport", "dry_run"]


@dataclass(frozen=True)
class Conflict:
    """F0101 (recorded results the new version never asks for) or F0102 (a node asked otherwise)."""

    code: str
    path: str
    detail: str


@dataclass(frozen=True)
class ResumeReport:
    """What a resume keeps, runs next and conflicts with. `repeats` is the stop it would meet again: the
    execution stopped on a mistake in the program (F0001) at a node nobody answered, and the version to
    resume on is the one it stopped under (the same structural hash): the same code runs the same node on
    the same record. A warning, not a conflict: the world the node reads may have changed."""

    kept: list[str] = field(default_factory=list)
    next_node: str | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    repeats: spi.Stopped | None = None

    @property
    def warning(self) -> str:
        """The sentence that warns of `repeats` ("" when there is nothing to warn of)."""
        stop = self.repeats
        if stop is None:
            return ""
        return (
            f"It would resume on the version it stopped under (the same structural hash), so the same "
            f"mistake will stop it again: {stop.code} at {stop.node or 'the flow'} ({stop.reason}). Deploy "
            f"a fixed version first, or answer {stop.node or 'the node'} if a person did its work."
        )


async def dry_run(flow: Flow, store: spi.FlowStore, execution_id: str, *, clock: Clock) -> ResumeReport:
    """What `flow` would keep and do next if it took over execution `execution_id`. Writes nothing."""
    state = await store.get_execution(execution_id)
    if state is None:
        raise FlowExecutionNotFound(execution_id)
    fields = await store.get_all_fields(execution_id)
    history = (await store.get_history(execution_id)).events
    rec = DryRecorder(
        flow,
        execution_id=execution_id,
        status=state.status,
        fields=fields,
        history=history,
        clock=clock,
        waits=state.waits,
    )
    conflicts = unowned(flow, fields, history)
    next_node: str | None = None
    try:
        await Walker(flow, rec).walk(flow.nodes, Scope(""))
    except Halt as halt:
        next_node = halt.path
    except Question as question:
        conflicts.append(Conflict("F0102", question.path, question.detail))
        next_node = question.path
    except StopFor as stop:
        next_node = stop.stopped.node or None
        if stop.stopped.code == "F0102":
            conflicts.append(Conflict("F0102", stop.stopped.node, stop.stopped.reason))
    except Parked as parked:
        next_node = min(parked.paths)
    except Exception as error:  # the new version fails on the record (a loop out of schedule, ...)
        conflicts.append(Conflict("F0102", "", f"{type(error).__name__}: {error}"))
    return ResumeReport(kept=list(dict.fromkeys(rec.kept)), next_node=next_node, conflicts=conflicts)


# ------------------------------------------------------------------------------------- the recorder


class DryRecorder(Recorder):
    """The dry run's recorder: it never writes, stops (Halt) at the first node that would run a body or
    wait, and has the walk ask recorded nodes' questions again (`reasks`) to compare them with the record.
    A woken sleep is one whose deadline has passed by now, as the next claim would find it."""

    reasks = True

    def guard(self, path: str) -> None:
        raise Halt(path)

    def heard_cancel(self) -> str | None:
        return None

    async def atomically(
        self, path: str, body: Callable[[], Any], declared: Any, notes: Sequence[Any], *, valued: bool
    ) -> Any:
        raise Halt(path)  # never reached: the guard before every body halts first

    def note(self, event: spi.Event) -> None:
        pass  # nothing is written, so nothing waits for a write

    def note_field(self, path: str, data: spi.FieldData) -> None:
        pass

    def discharge(self, path: str) -> None:
        pass

    def woken(self, path: str, row: spi.Wake | None) -> bool:
        return isinstance(row, spi.WakeAt) and (self.clock.now() >= row.at or path in self.satisfied)

    async def supply(self, prefix: str, supplied: Mapping[str, spi.FieldData]) -> None:
        """The child's inputs as the mapper gives them now, in memory: the child reads them, the report
        does not count them as kept."""
        self.fields.update(supplied)
        self.virtual.update(supplied)

    def miscounted(self, path: str, recorded: int, now: int) -> BaseException:
        return Question(path, f"the record has {recorded} items, now {now}")

    async def join(self, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
        for job in jobs:
            await job()

    async def race(self, jobs: Sequence[Callable[[], Awaitable[None]]]) -> int:
        """The first branch that gets through without halting wins; none did: the first halt."""
        halted: Halt | None = None
        for index, job in enumerate(jobs):
            try:
                await job()
                return index
            except Halt as halt:
                halted = halted or halt
        assert halted is not None
        raise halted

    async def flush(self, start: spi.Event | None = None) -> None:
        _wrote()

    async def defer(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        extra: Mapping[str, spi.FieldData] | None = None,
    ) -> None:
        _wrote()

    async def progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        extra: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        _wrote()

    async def wait(self, path: str, wake: spi.Wake, event: spi.Event) -> None:
        _wrote()


def _wrote() -> NoReturn:
    # a dry run reaching a write is a bug in the walk, not a user's
    raise RuntimeError("a dry run tried to write")


# ------------------------------------------------------------------------------------------- F0101


def recorded_keys(fields: Mapping[str, spi.FieldData], history: Iterable[spi.Event]) -> list[str]:
    keys = dict.fromkeys(fields)
    kind = spi.EventKind
    for event in history:
        if event.kind in (kind.STEP_COMPLETED, kind.SLEEP_COMPLETED):
            keys.setdefault(event.data.get("step_name", ""))
        elif event.kind in (kind.INPUT_DISCHARGED, kind.INPUT_SUPPLIED):
            keys.setdefault(event.data.get("input_name", ""))
    keys.pop("", None)
    return list(keys)


def unowned(flow: Flow, fields: Mapping[str, spi.FieldData], history: Iterable[spi.Event]) -> list[Conflict]:
    paths = schema.durable_names(flow)
    return [
        Conflict("F0101", key, "recorded, but the new version has no node that asks for it")
        for key in recorded_keys(fields, history)
        if schema.owner_of(key, paths) is None
    ]
