"""The engine's knobs, in one frozen options object (procrastinate's `WorkerOptions` habit).

A bad configuration is refused when the object is built, listing every problem at once, so an operator
fixes a settings file in one go rather than one error per restart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from flowdeck.engine.errors import FlowConfigError

if TYPE_CHECKING:
    from flowdeck.engine.rate_limits import RateLimit

__all__ = ["EngineConfig", "Transient", "never"]

Transient = Callable[[BaseException], bool]
"""Whether an exception a step body raised is the world not answering (a locked database, a lost
connection): retried like `FlowRetry`, never taken for a mistake in the program."""


def never(error: BaseException) -> bool:
    """The default `transient`: no exception is, unless the engine is told otherwise."""
    return False


@dataclass(frozen=True)
class EngineConfig:
    """How an engine polls, claims and lets go.

    - `workers`: workers of this engine, all under one executor id; with `batch_size` they size the
      engine's attempt slots (`workers × batch_size` attempts at once). One claim loop serves them all.
    - `lease`: how long a claim lasts without renewal; it is also how long a crashed engine's executions
      wait before another engine picks them up.
    - `renew_every`: how often a running attempt renews its claim; must be shorter than `lease`.
    - `batch_size`: executions each worker runs at once; one poll claims up to every free slot and the
      claimed rows run concurrently.
    - `poll_timeout`: how long one poll blocks while nothing is ready, and the pause after a failed poll.
    - `shutdown_grace`: on leaving the engine, how long in-flight attempts may run on (real time) before
      they are cancelled; a cancelled attempt writes nothing more and its claim lapses after `lease`.
    - `transient`: answers True for an exception a body raised that the world caused (the Django
      composition root passes `flowdeck.store.django.errors.is_transient`: a locked or busy database, a lost
      connection); it is retried under the node's schedule, or `bodies.TRANSIENT_RETRY` when the node has
      none, and stops the execution F0003 only once spent. Default: never.
    - `rate_limits`: the named rate limits its flows' nodes may use (`engine/rate_limits.py`), by name;
      a flow using one not named here is refused at registration.
    """

    workers: int = 2
    lease: timedelta = timedelta(seconds=30)
    renew_every: timedelta = timedelta(seconds=10)
    batch_size: int = 4
    poll_timeout: timedelta = timedelta(seconds=30)
    shutdown_grace: timedelta = timedelta(seconds=10)
    transient: Transient = never
    rate_limits: Mapping[str, RateLimit] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise FlowConfigError(problems)

    def problems(self) -> list[str]:
        """Every bad setting, in declaration order (empty when the configuration is sound)."""
        found: list[str] = []
        if self.workers < 1:
            found.append(f"workers must be at least 1 (got {self.workers})")
        if self.batch_size < 1:
            found.append(f"batch_size must be at least 1 (got {self.batch_size})")
        for name in ("lease", "renew_every", "poll_timeout"):
            value: timedelta = getattr(self, name)
            if value <= timedelta(0):
                found.append(f"{name} must be positive (got {value.total_seconds():g}s)")
        if self.shutdown_grace < timedelta(0):
            found.append(
                f"shutdown_grace must not be negative (got {self.shutdown_grace.total_seconds():g}s)"
            )
        for name in self.rate_limits:
            if not isinstance(name, str) or not name or "#" in name:
                found.append(f"a rate limit's name must be a non-empty str without '#' (got {name!r})")
        if timedelta(0) < self.lease <= self.renew_every:
            found.append(
                f"renew_every ({self.renew_every.total_seconds():g}s) must be shorter than "
                f"lease ({self.lease.total_seconds():g}s), or claims lapse between renewals"
            )
        return found
