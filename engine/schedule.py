"""Schedules: how long to wait before the next retry or the next scheduled-loop iteration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

__all__ = ["Schedule"]


@dataclass(frozen=True)
class Schedule:
    """A pure function from an attempt number to a delay, or None once exhausted.

    `Schedule.fixed(d)`, `Schedule.exponential(initial, factor, max)`, and `.take(n)` to bound the count.
    Attempt numbers start at 0 (the delay before the first retry / between iterations 0 and 1).
    """

    kind: str
    initial: timedelta
    factor: float = 1.0
    maximum: timedelta | None = None
    limit: int | None = None

    @classmethod
    def fixed(cls, delay: timedelta) -> Schedule:
        return cls("fixed", delay)

    @classmethod
    def exponential(cls, initial: timedelta, factor: float = 2.0, max: timedelta | None = None) -> Schedule:
        return cls("exponential", initial, factor, max)

    def take(self, n: int) -> Schedule:
        """At most `n` delays; after that the schedule is exhausted."""
        return replace(self, limit=n if self.limit is None else min(n, self.limit))

    def delay(self, attempt: int) -> timedelta | None:
        """The delay before retry number `attempt` (0-based), or None when the schedule is spent."""
        if self.limit is not None and attempt >= self.limit:
            return None
        if self.kind == "fixed":
            return self.initial
        seconds = self.initial.total_seconds() * (self.factor**attempt)
        if self.maximum is not None:
            seconds = min(seconds, self.maximum.total_seconds())
        return timedelta(seconds=seconds)

    def describe(self) -> str:
        if self.kind == "fixed":
            text = f"fixed({self.initial.total_seconds():g}s)"
        else:
            cap = f", max={self.maximum.total_seconds():g}s" if self.maximum is not None else ""
            text = f"exponential({self.initial.total_seconds():g}s, x{self.factor:g}{cap})"
        return text + (f".take({self.limit})" if self.limit is not None else "")
