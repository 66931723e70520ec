"""The search language over executions: the filter arms, their wire words, and the meaning of each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from flowdeck.store.counts import RETRY_MARK
from flowdeck.store.executions import ExecutionState
from flowdeck.store.rate_limits import rate_row_matches
from flowdeck.store.status import Cancelled, Compensating, Completed, Failed, Running, Stopped
from flowdeck.store.wakes import WakeAt, WakeOnField


class FilterParseError(ValueError):
    """A wire filter string that names no filter (or an empty narrowing like `failed:`)."""


class ExecutionFilter:
    """What an operator searches executions by. Not the lifecycle: it includes waits and cancel requests.

    A wait-kind arm matches when ANY of the execution's rows does.
    """

    @dataclass(frozen=True)
    class Running:
        pass

    @dataclass(frozen=True)
    class Completed:
        pass

    @dataclass(frozen=True)
    class Cancelled:
        pass

    @dataclass(frozen=True)
    class Compensating:
        """Unwinding, whatever the cause."""

    @dataclass(frozen=True)
    class Failed:
        """Every failure when `kind` is None, else those whose kind is exactly `kind`."""

        kind: str | None = None

    @dataclass(frozen=True)
    class Sleeping:
        """Has any `WakeAt` row."""

    @dataclass(frozen=True)
    class WaitingForInput:
        """Has any `WakeOnField` row, or the one for input `name`."""

        name: str | None = None

    @dataclass(frozen=True)
    class Cancelling:
        """A cancel was requested and the execution has not ended."""

    @dataclass(frozen=True)
    class Orphaned:
        """Not terminal, and its hash is not among `served_hashes` (held by a version no engine serves)."""

        served_hashes: frozenset[str]

    @dataclass(frozen=True)
    class Served:
        """Ended, or held by a version among `served_hashes`: everything `Orphaned` is not (the console's
        unended words leave parked executions out with it: nothing runs them)."""

        served_hashes: frozenset[str]

    @dataclass(frozen=True)
    class Both:
        """Matches what `first` and `second` both match (a status word narrowed to served or parked)."""

        first: ExecutionFilter.Any
        second: ExecutionFilter.Any

    @dataclass(frozen=True)
    class Stopped:
        """Stopped for a person; with `code`, only that stop code."""

        code: str | None = None

    @dataclass(frozen=True)
    class Retrying:
        """A node's last attempt failed and another is scheduled: a `WakeAt` row whose path holds
        `counts.RETRY_MARK` (the population of the overview's "retrying now")."""

    @dataclass(frozen=True)
    class RateLimited:
        """A node waits for its rate limit's token (of `limit`, when given): a `WakeAt` row at
        `<path>#rate:<limit>` (store/rate_limits.py)."""

        limit: str | None = None

    @dataclass(frozen=True)
    class Queued:
        """Over its concurrency limit (`store.concurrency`): started under a limit, running with no wait row,
        no cancel request and no claim (never claimed, or handed back), so only a slot keeps it from running.
        `queued=False` selects everything else (the console's `running` word leaves the queued out)."""

        queued: bool = True

    Any: ClassVar[TypeAlias] = (
        Running
        | Completed
        | Cancelled
        | Compensating
        | Failed
        | Sleeping
        | WaitingForInput
        | Cancelling
        | Orphaned
        | Served
        | Both
        | Stopped
        | Retrying
        | RateLimited
        | Queued
    )

    WIRE_WORDS: ClassVar[tuple[str, ...]] = (
        "running",
        "completed",
        "cancelled",
        "cancelling",
        "compensating",
        "failed",
        "failed:<kind>",
        "sleeping",
        "waiting",
        "waiting:<name>",
        "stopped",
        "stopped:<code>",
        "retrying",
        "rate-limited",
        "rate-limited:<limit>",
        "queued",
    )

    @classmethod
    def parse(cls, wire: str) -> ExecutionFilter.Any:
        """Parse the wire vocabulary; an unknown word or an empty narrowing raises `FilterParseError`.

        `Orphaned`, `Served` and `Both` have no spelling on purpose: their parameter is one engine's served
        set.
        """
        simple: dict[str, ExecutionFilter.Any] = {
            "running": cls.Running(),
            "completed": cls.Completed(),
            "cancelled": cls.Cancelled(),
            "cancelling": cls.Cancelling(),
            "compensating": cls.Compensating(),
            "failed": cls.Failed(),
            "sleeping": cls.Sleeping(),
            "waiting": cls.WaitingForInput(),
            "stopped": cls.Stopped(),
            "retrying": cls.Retrying(),
            "rate-limited": cls.RateLimited(),
            "queued": cls.Queued(),
        }
        if wire in simple:
            return simple[wire]
        for prefix, make in (
            ("failed:", cls.Failed),
            ("waiting:", cls.WaitingForInput),
            ("stopped:", cls.Stopped),
            ("rate-limited:", cls.RateLimited),
        ):
            if wire.startswith(prefix):
                rest = wire[len(prefix) :]
                if not rest:
                    raise FilterParseError(f"{wire!r} narrows to nothing: give a value after the colon")
                return make(rest)
        raise FilterParseError(
            f"unknown status filter {wire!r}; expected one of: {', '.join(cls.WIRE_WORDS)}"
        )


def filter_matches(filt: ExecutionFilter.Any, state: ExecutionState) -> bool:
    """The reference meaning of each filter arm (the memory store uses it; SQL stores mirror it)."""
    status = state.status
    match filt:
        case ExecutionFilter.Running():
            return isinstance(status, Running)
        case ExecutionFilter.Completed():
            return isinstance(status, Completed)
        case ExecutionFilter.Cancelled():
            return isinstance(status, Cancelled)
        case ExecutionFilter.Compensating():
            return isinstance(status, Compensating)
        case ExecutionFilter.Failed(kind):
            return isinstance(status, Failed) and (kind is None or status.kind == kind)
        case ExecutionFilter.Sleeping():
            return any(isinstance(w, WakeAt) for w in state.waits.values())
        case ExecutionFilter.WaitingForInput(name):
            return any(
                isinstance(w, WakeOnField) and (name is None or w.name == name) for w in state.waits.values()
            )
        case ExecutionFilter.Cancelling():
            return state.cancel_requested and not status.terminal
        case ExecutionFilter.Orphaned(served):
            return not status.terminal and state.hash not in served
        case ExecutionFilter.Served(served):
            return status.terminal or state.hash in served
        case ExecutionFilter.Both(first, second):
            return filter_matches(first, state) and filter_matches(second, state)
        case ExecutionFilter.Stopped(code):
            return isinstance(status, Stopped) and (code is None or status.code == code)
        case ExecutionFilter.Retrying():
            return any(isinstance(w, WakeAt) and RETRY_MARK in path for path, w in state.waits.items())
        case ExecutionFilter.RateLimited(limit):
            return any(isinstance(w, WakeAt) and rate_row_matches(p, limit) for p, w in state.waits.items())
        case ExecutionFilter.Queued(queued):
            return is_queued(state) == queued
    raise TypeError(f"not a filter: {filt!r}")


def is_queued(state: ExecutionState) -> bool:
    """`ExecutionFilter.Queued`'s meaning on one row."""
    return (
        state.concurrency is not None
        and isinstance(state.status, Running)
        and not state.cancel_requested
        and not state.waits
        and state.claim_expiry is None
    )
