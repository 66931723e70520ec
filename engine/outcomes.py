"""How an attempt ends: the signals the walk raises to end it, and the report `run_attempt` answers.

The signals are the interpreter's own verdicts, never a body's mistake: a body raising one passes it
through untouched (`PASS_THROUGH`). Their public home is `engine.interpreter` (they are re-exported there,
and keep that module in their name, so tracebacks and logs read as before).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass

from flowdeck.engine.errors import FlowCancelled
from flowdeck.store import spi

__all__ = [
    "PASS_THROUGH",
    "AttemptReport",
    "ClaimLost",
    "Halt",
    "Parked",
    "Question",
    "ResumedUnwind",
    "StopFor",
    "describe",
    "mistake",
]

_HOME = "flowdeck.engine.interpreter"


class Parked(Exception):
    """The walk waits on these rows; the attempt ends Suspended(paths), holding nothing."""

    __module__ = _HOME

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        super().__init__(", ".join(sorted(self.paths)))


class StopFor(Exception):
    """The execution stops for a person with this stop code."""

    __module__ = _HOME

    def __init__(
        self, code: str, node: str, reason: str, detail: str = "", cause: spi.Cause | None = None
    ) -> None:
        super().__init__(f"{code} at {node}: {reason}")
        self.stopped = spi.Stopped(code, node, reason, detail, cause)


class ClaimLost(Exception):
    """A write was refused: this attempt no longer holds the execution."""

    __module__ = _HOME


class ResumedUnwind(Exception):
    """An attempt resuming an unwind reached a node that would do work: the recorded verdict stands."""

    __module__ = _HOME

    def __init__(self, cause: spi.Cause) -> None:
        super().__init__("resuming the unwind")
        self.cause = cause


class Halt(Exception):
    """Dry run only: the node at `path` would run a body (or wait); the replay stops there."""

    __module__ = _HOME

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Question(Exception):
    """Dry run only: a recorded node is now asked a different question (F0102)."""

    __module__ = _HOME

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


PASS_THROUGH = (Parked, StopFor, ClaimLost, ResumedUnwind, Halt, Question, spi.FlowStoreError, FlowCancelled)
"""Exceptions that are the interpreter's own verdicts or infrastructure: never a body's mistake."""


@dataclass(frozen=True)
class AttemptReport:
    execution_id: str
    outcome: str  # completed, failed, cancelled, suspended, stopped, claim-lost, no-work
    detail: str = ""


AttemptReport.__module__ = _HOME


def describe(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def mistake(path: str, error: BaseException) -> StopFor:
    """A mistake in the program: stop for a person, keeping the traceback; nothing is undone."""
    return StopFor("F0001", path, f"{type(error).__name__}: {error}", describe(error))
