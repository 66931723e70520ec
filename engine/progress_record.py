"""What an execution's record says about each durable path, for engine/progress.py to paint.

Pure: it reads a row, its fields and its history, and calls no store. Times are positions in the history
(a value field counts as written with the last event naming its path, or before the history began), so
that progress can tell which of several nodes sharing a durable path (a race's arms all producing
`decision`) a fact belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from flowdeck.engine import schema
from flowdeck.store import spi

__all__ = ["Record", "completed_at", "read"]


@dataclass(frozen=True)
class Record:
    """The record indexed by durable path: when each completed (`completed`), its latest failure (time and
    error), compensation marks, wait rows, the stop and the dispatch choices; per foreach the item indices
    started and failed; per path how many checkpoints (loop_on iterations) it has, and the iterations a
    plain loop's StepCompleted tells (`iterations`: a loop writes no field per iteration). While the
    execution is stopped, `answered` holds the paths a person answered (they await a resume); `interrupted`
    says a cancel or an end ended it, so whatever was under way never finished."""

    running: bool
    completed: Mapping[str, int]
    failed: Mapping[str, tuple[int, str]]
    compensated: frozenset[str]
    waits: Mapping[str, spi.Wake]
    fields: Mapping[str, spi.FieldData]
    stopped_at: str | None
    stop_detail: str
    chosen: Mapping[str, str]
    items_started: Mapping[str, frozenset[int]] = field(default_factory=dict)
    items_failed: Mapping[str, frozenset[int]] = field(default_factory=dict)
    checkpoints: Mapping[str, int] = field(default_factory=dict)
    iterations: Mapping[str, int] = field(default_factory=dict)
    answered: frozenset[str] = frozenset()
    interrupted: bool = False

    def live_failure(self, path: str) -> str | None:
        """The failure of `path` unless a later completion superseded it."""
        failure = self.failed.get(path)
        if failure is None:
            return None
        done = self.completed.get(path)
        return failure[1] if done is None or failure[0] > done else None


_COMPLETION_KEYS: dict[spi.EventKind, str] = {
    spi.EventKind.STEP_COMPLETED: "step_name",
    spi.EventKind.SLEEP_COMPLETED: "step_name",
    spi.EventKind.INPUT_DISCHARGED: "input_name",
    spi.EventKind.INPUT_SUPPLIED: "input_name",
    spi.EventKind.ANSWERED: "node",
}


def completed_at(history: Sequence[spi.Event], paths: Collection[str]) -> datetime | None:
    """When the last of `paths` completed, as the history tells it (a race is decided then)."""
    return max(
        (
            e.timestamp
            for e in history
            if e.kind in _COMPLETION_KEYS and str(e.data.get(_COMPLETION_KEYS[e.kind], "")) in paths
        ),
        default=None,
    )


def _item(key: str, owner: str) -> int | None:
    rest = key[len(owner) + 1 :] if key.startswith(f"{owner}~") else ""
    return int(rest) if rest.isdigit() else None


class _Reader:
    def __init__(self, known: frozenset[str]) -> None:
        self.known = known
        self.completed: dict[str, int] = {}
        self.failed: dict[str, tuple[int, str]] = {}
        self.compensated: set[str] = set()
        self.chosen: dict[str, str] = {}
        self.started: dict[str, set[int]] = {}
        self.items_failed: dict[str, set[int]] = {}
        self.mentioned: dict[str, int] = {}  # the latest event naming each path
        self.iterations: dict[str, int] = {}
        self.answered: set[str] = set()

    def event(self, at: int, event: spi.Event) -> None:
        data = event.data
        for name in ("step_name", "input_name", "node"):
            if str(data.get(name, "")) in self.known:
                self.mentioned[str(data[name])] = at
        key = _COMPLETION_KEYS.get(event.kind)
        if key is not None:
            # Exact paths only: `items~3` completing is one foreach item, not the foreach.
            path = str(data.get(key, ""))
            if path in self.known:
                self.completed[path] = at
                if event.kind is spi.EventKind.ANSWERED:
                    self.answered.add(path)
                count = data.get("iterations")
                if isinstance(count, int) and not isinstance(count, bool):
                    self.iterations[path] = count
        elif event.kind is spi.EventKind.STEP_STARTED:
            self.item(self.started, str(data.get("step_name", "")))
        elif event.kind is spi.EventKind.STEP_FAILED:
            raw = str(data.get("step_name", ""))
            path = schema.owner_of(raw, self.known)
            if path is not None:
                self.failed[path] = (at, str(data.get("error", "")))
                self.item(self.items_failed, raw)
        elif event.kind is spi.EventKind.NODE_COMPENSATED:
            path = schema.owner_of(str(data.get("node_name", "")), self.known)
            if path is not None:
                self.compensated.add(path)
        elif event.kind is spi.EventKind.BRANCH_CHOSEN:
            self.chosen[str(data.get("dispatch_name", ""))] = str(data.get("branch_name", ""))

    def item(self, into: dict[str, set[int]], raw: str) -> None:
        owner = schema.owner_of(raw, self.known)
        index = None if owner is None else _item(raw, owner)
        if owner is not None and index is not None:
            into.setdefault(owner, set()).add(index)


def read(
    state: spi.ExecutionState,
    fields: Mapping[str, spi.FieldData],
    history: Sequence[spi.Event],
    known: frozenset[str],
    runs: bool = True,
) -> Record:
    """The record of `state`; `runs` False (a parked execution: no process serves its version) paints
    nothing running, whatever its status says."""
    reader = _Reader(known)
    for at, event in enumerate(history):
        reader.event(at, event)
    checkpoints: dict[str, int] = {}
    for name, value in fields.items():
        if name.endswith("#chosen"):
            reader.chosen.setdefault(name[: -len("#chosen")], _decoded_text(value))
        elif name in known:
            # A value stands over any failure: it was written with (or after) the last event naming it. One
            # no event names (an input given at the start) was there before the history began.
            reader.completed[name] = max(reader.completed.get(name, -1), reader.mentioned.get(name, -1))
        else:
            head, _, tail = name.rpartition("#")
            if head in known and tail.isdigit():  # a loop_on's checkpoint `poll#3`
                checkpoints[head] = checkpoints.get(head, 0) + 1
    status = state.status
    stopped_at, stop_detail = None, ""
    if isinstance(status, spi.Stopped):
        stopped_at = schema.owner_of(status.node, known) or ""
        stop_detail = f"{status.code}: {status.reason}" if status.reason else status.code
    return Record(
        running=runs and isinstance(status, spi.Running),
        completed=reader.completed,
        failed=reader.failed,
        compensated=frozenset(reader.compensated),
        waits={
            path: wake for p, wake in state.waits.items() if (path := schema.owner_of(p, known)) is not None
        },
        fields=fields,
        stopped_at=stopped_at,
        stop_detail=stop_detail,
        chosen=reader.chosen,
        items_started={k: frozenset(v) for k, v in reader.started.items()},
        items_failed={k: frozenset(v) for k, v in reader.items_failed.items()},
        checkpoints=checkpoints,
        iterations=reader.iterations,
        answered=frozenset(reader.answered) if isinstance(status, spi.Stopped) else frozenset(),
        interrupted=_interrupted(status),
    )


def _interrupted(status: spi.Status) -> bool:
    """Ended by a cancel, or by an operator's end (`Failed` of kind "Ended"): nothing under way finished."""
    return isinstance(status, spi.Cancelled) or (isinstance(status, spi.Failed) and status.kind == "Ended")


def _decoded_text(value: spi.FieldData) -> str:
    try:
        decoded = value.decode()
    except (ValueError, TypeError):
        return value.value
    return decoded if isinstance(decoded, str) else json.dumps(decoded)
