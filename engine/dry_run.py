"""The dry run behind `resume`: replay a new version of a flow against an execution's record, in memory.

It walks the new version as an attempt would, skipping every node whose record it finds, and stops at the
first node that would run a body (or wait). It runs no body and writes nothing. The pure parts of the nodes
it passes are re-evaluated and compared to the record, because they are the question a node was asked: a
subflow's mapped child inputs, a foreach's collection (its count), the branch a dispatch's conditions
choose. A different answer is F0102. A recorded durable key that no node of the new version owns is F0101.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine import interpreter, schema
from engine.errors import FlowExecutionNotFound
from engine.flow import Flow
from engine.interpreter import Attempt, Halt, Question, Scope, StopFor
from store import spi
from store.clock import Clock

__all__ = ["Conflict", "ResumeReport", "dry_run"]


@dataclass(frozen=True)
class Conflict:
    """F0101 (recorded results the new version never asks for) or F0102 (a node asked otherwise)."""

    code: str
    path: str
    detail: str


@dataclass(frozen=True)
class ResumeReport:
    kept: list[str] = field(default_factory=list)
    next_node: str | None = None
    conflicts: list[Conflict] = field(default_factory=list)


async def dry_run(flow: Flow, store: spi.FlowStore, execution_id: str, *, clock: Clock) -> ResumeReport:
    """What `flow` would keep and do next if it took over execution `execution_id`. Writes nothing."""
    state = await store.get_execution(execution_id)
    if state is None:
        raise FlowExecutionNotFound(execution_id)
    fields = await store.get_all_fields(execution_id)
    history = (await store.get_history(execution_id)).events
    run = Attempt(
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
        await run.walk(flow.nodes, Scope(""))
    except Halt as halt:
        next_node = halt.path
    except Question as question:
        conflicts.append(Conflict("F0102", question.path, question.detail))
        next_node = question.path
    except StopFor as stop:
        next_node = stop.stopped.node or None
        if stop.stopped.code == "F0102":
            conflicts.append(Conflict("F0102", stop.stopped.node, stop.stopped.reason))
    except interpreter.Parked as parked:
        next_node = min(parked.paths)
    except Exception as error:  # the new version fails on the record (a loop out of schedule, ...)
        conflicts.append(Conflict("F0102", "", f"{type(error).__name__}: {error}"))
    return ResumeReport(kept=list(dict.fromkeys(run.kept)), next_node=next_node, conflicts=conflicts)


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
