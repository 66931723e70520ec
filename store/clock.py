"""Time, as the store and the engine see it.

Everything that judges a lease, a sleep deadline or a blocking poll's deadline asks a `Clock`, so tests
move time by hand (`ManualClock.advance`) instead of sleeping. Wall time (`now`) stamps rows and events
and judges `Wake.At` rows and lease expiry; monotonic time bounds how long a caller blocks, so a wall
clock stepping back or forward never stretches or cuts a poll.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """The two times a store and an engine need, and a way to wait on the monotonic one."""

    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps; only differences mean anything."""
        ...

    def sleep(self, seconds: float) -> Awaitable[None]:
        """Wait until `seconds` of monotonic time have passed, counted from the call (not from the first
        time the awaitable runs: a sleep handed to `ensure_future` must not start late)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock that moves only when a test says so.

    `advance` moves wall and monotonic time together and wakes every sleeper whose deadline it passed;
    `step_wall` moves the wall clock alone, as an NTP correction would. `now_calls` counts wall-clock reads,
    which some store cases assert on.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._wall = start or datetime(2030, 1, 1, tzinfo=UTC)
        self._mono = 1_000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.now_calls = 0

    def now(self) -> datetime:
        self.now_calls += 1
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def sleep(self, seconds: float) -> Awaitable[None]:
        # The deadline is taken now, not when the awaitable first runs: a caller that computed `seconds`
        # from `monotonic()` and handed the sleep to `ensure_future` would otherwise, if an `advance`
        # slipped in before the task started, sleep `seconds` past the advanced time and miss it.
        if seconds <= 0:
            return asyncio.sleep(0)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._order), future))
        return future

    async def advance(self, seconds: float | timedelta) -> None:
        """Move both clocks forward, wake the sleepers that came due, and let them run."""
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        target = self._mono + seconds
        # Wake sleepers in deadline order, each at its own instant, so a chain of sleeps inside the
        # advanced window sees the times it would have seen in real life.
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            step = deadline - self._mono
            if step > 0:
                self._mono = deadline
                self._wall += timedelta(seconds=step)
            if not future.done():
                future.set_result(None)
            await settle()
        rest = target - self._mono
        self._mono = target
        self._wall += timedelta(seconds=rest)
        await settle()

    def pending_sleeps(self) -> int:
        """How many sleeps wait for time to move (a test lets blocked callers reach their wait first)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    def step_wall(self, delta: timedelta) -> None:
        """Move the wall clock alone (monotonic time does not notice)."""
        self._wall += delta


async def settle(rounds: int = 20) -> None:
    """Give every ready task a chance to run (a few loop turns)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
