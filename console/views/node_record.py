"""What an execution's history says about one node: its attempts, its next retry, its compensation, and a
foreach's items. Pure: it reads events, fields and the row, and calls no store.

An attempt opens at the node's StepStarted and closes at its StepRetried, StepFailed, StepCompleted or a
Stopped naming it. A retry taken in process writes no StepStarted of its own: the next attempt then opens
when its back-off ran out (the retry's time plus its delay). A StepTimedOut marks the attempt it ends as
timed out. Retries recorded after a CompensationStarted belong to the undo, not to the node's own run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flowdeck.store import spi

__all__ = ["Attempt", "Compensation", "Item", "attempts_of", "compensation_of", "items_of", "next_retry"]

_K = spi.EventKind


@dataclass
class Attempt:
    """One try of a node's body. `outcome`: running, completed, retried, timed out, failed, stopped."""

    number: int
    started: datetime | None
    ended: datetime | None = None
    outcome: str = "running"
    error: str = ""
    error_kind: str = ""
    traceback: str = ""

    @property
    def duration(self) -> timedelta | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


@dataclass(frozen=True)
class Compensation:
    """The node's undo: whether one is registered (a handler, or undo notes kept with its result), whether
    it ran to its end, the error of a run that kept failing, and the retries it took."""

    registered: bool
    ran: bool = False
    failed: str = ""
    retries: int = 0
    handlers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    """One item of a foreach: its index, the state its record implies, its value (JSON text) and error."""

    index: int
    status: str
    value: str | None = None
    error: str = ""
    attempts: int = 0


@dataclass
class _Run:
    attempts: list[Attempt] = field(default_factory=list)
    resumes_at: datetime | None = None  # an in-process retry's next attempt starts then

    def open(self, at: datetime | None) -> Attempt:
        if self.attempts and self.attempts[-1].ended is None:
            return self.attempts[-1]
        attempt = Attempt(len(self.attempts) + 1, at)
        self.attempts.append(attempt)
        return attempt

    def close(self, at: datetime, outcome: str, **facts: Any) -> None:
        attempt = self.open(self.resumes_at)
        self.resumes_at = None
        attempt.ended = at
        if attempt.outcome != "timed out" or outcome != "retried":
            attempt.outcome = outcome
        for name, value in facts.items():
            setattr(attempt, name, value)


def attempts_of(path: str, history: Sequence[spi.Event], status: spi.Status) -> list[Attempt]:
    """Every attempt of the node (or foreach item) at `path`, oldest first."""
    run = _Run()
    unwinding = False
    for event in history:
        data = event.data
        at = event.timestamp
        if event.kind is _K.COMPENSATION_STARTED:
            unwinding = True
        if event.kind is _K.STOPPED and data.get("node") == path:
            if run.attempts and run.attempts[-1].ended is None:
                run.close(at, "stopped", error=f"{data.get('code', '')}: {data.get('reason', '')}")
            continue
        if data.get("step_name") != path or unwinding:
            continue
        match event.kind:
            case _K.STEP_STARTED:
                if run.attempts and run.attempts[-1].ended is None:
                    run.close(at, "lost", error="no outcome recorded (the worker went away)")
                run.resumes_at = None
                run.open(at)
            case _K.STEP_TIMED_OUT:
                attempt = run.open(run.resumes_at)
                attempt.outcome = "timed out"
                attempt.error = f"timed out after {data.get('timeout', 0):g}s"
            case _K.STEP_RETRIED:
                run.close(at, "retried", error=str(data.get("error", "")))
                run.resumes_at = at + timedelta(seconds=float(data.get("delay", 0) or 0))
            case _K.STEP_FAILED:
                run.close(
                    at,
                    "failed",
                    error=str(data.get("error", "")),
                    error_kind=str(data.get("error_kind") or ""),
                )
            case _K.STEP_COMPLETED:
                run.close(at, "completed")
    if isinstance(status, spi.Stopped) and status.node == path and run.attempts:
        last = run.attempts[-1]
        if last.outcome in ("stopped", "failed", "running"):
            last.outcome = "stopped"
            last.error = last.error or f"{status.code}: {status.reason}"
            last.traceback = status.detail
    return run.attempts


def next_retry(path: str, waits: Mapping[str, spi.Wake], history: Sequence[spi.Event]) -> datetime | None:
    """When the node's next attempt is due: its durable back-off row, else an in-process back-off that
    is the node's latest event (a worker is sleeping it out)."""
    rows = [w.at for p, w in waits.items() if p.startswith(f"{path}#retry") and isinstance(w, spi.WakeAt)]
    if rows:
        return min(rows)
    latest = next((e for e in reversed(history) if e.data.get("step_name") == path), None)
    if latest is not None and latest.kind is _K.STEP_RETRIED:
        return latest.timestamp + timedelta(seconds=float(latest.data.get("delay", 0) or 0))
    return None


def compensation_of(
    path: str, registered: bool, history: Sequence[spi.Event], fields: Mapping[str, spi.FieldData]
) -> Compensation:
    """The undo of the node at `path` (its foreach items' undos count as its own)."""

    def mine(name: object) -> bool:
        text = str(name or "")
        return text == path or text.startswith(f"{path}~")

    ran = failed = ""
    retries = 0
    unwinding = False
    handlers: list[str] = []
    for event in history:
        data = event.data
        match event.kind:
            case _K.COMPENSATION_STARTED:
                unwinding = True
            case _K.UNDO_NOTED if mine(data.get("node")):
                handlers.append(str(data.get("handler", "")))
            case _K.NODE_COMPENSATED if mine(data.get("node_name")):
                ran = "yes"
            case _K.COMPENSATION_FAILED if mine(data.get("node_name")):
                failed = str(data.get("error", ""))
            case _K.STEP_RETRIED if unwinding and mine(data.get("step_name")):
                retries += 1
    undo_notes = any(mine(name.removesuffix("#undo")) for name in fields if name.endswith("#undo"))
    return Compensation(
        registered or bool(handlers) or undo_notes, bool(ran), failed, retries, tuple(handlers)
    )


def _count(fields: Mapping[str, spi.FieldData], path: str) -> int:
    raw = fields.get(f"{path}~count")
    if raw is None:
        return 0
    try:
        decoded = raw.decode()
    except (ValueError, TypeError):
        return 0
    return decoded if isinstance(decoded, int) else len(decoded)


def items_of(
    path: str,
    fields: Mapping[str, spi.FieldData],
    history: Sequence[spi.Event],
    waits: Mapping[str, spi.Wake],
    status: spi.Status,
) -> list[Item]:
    """A foreach's items, as far as its record goes (none before its collection was counted)."""
    compensated = {str(e.data.get("node_name", "")) for e in history if e.kind is _K.NODE_COMPENSATED}
    items = []
    for i in range(_count(fields, path)):
        item_path = f"{path}~{i}"
        attempts = attempts_of(item_path, history, status)
        value = fields.get(item_path)
        last = attempts[-1] if attempts else None
        if item_path in compensated:
            state = "compensated"
        elif value is not None:
            state = "completed"
        elif any(p.startswith(f"{item_path}#retry") for p in waits):
            state = "sleeping"
        elif last is not None and last.outcome in ("failed", "stopped"):
            state = last.outcome
        elif last is not None and last.outcome in ("running", "retried", "timed out"):
            state = "running" if isinstance(status, spi.Running) else "pending"
        else:
            state = "pending"
        error = last.error if last is not None and state != "completed" else ""
        items.append(Item(i, state, value.value if value is not None else None, error, len(attempts)))
    return items
