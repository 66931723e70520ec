"""Waking blocked `claim_ready` callers, the same way in every store: a broadcast hub and the wait on it.

The hub counts changes (a generation). A caller records the generation before its first ask, so only a
change made after the call began wakes it, and one change wakes every blocked caller, on whatever event
loop or thread each runs. A store bumps it after each write that can make a row ready (the Django store
also when another process's write is heard of: `store/django/wakeups.py`).
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from flowdeck.store.clock import Clock

__all__ = ["Asked", "WakeHub", "Woken", "poll", "wait_for_change"]

T = TypeVar("T")


class Woken(enum.Enum):
    """What ended a blocked caller's wait."""

    WRITE = "write"
    REGISTRATION = "registration"
    TIMED_OUT = "timed-out"


class WakeHub:
    """A change generation and the futures of the callers blocked on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.generation = 0
        self.registrations = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def changed(self, *, registration: bool = False) -> None:
        """Something that may make a row ready happened: wake every blocked caller."""
        with self._lock:
            self.generation += 1
            if registration:
                self.registrations += 1
            waiters = list(self._waiters)
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                with self._lock:
                    self._waiters.discard((loop, future))

    def waiter(self) -> asyncio.Future[None]:
        """A future resolved at the next change; `forget` it when done."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.add((loop, future))
        return future

    def forget(self, future: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters.discard((future.get_loop(), future))
        future.cancel()


async def wait_for_change(
    hub: WakeHub,
    clock: Clock,
    generation: int,
    registrations: int,
    remaining: float,
    alarm: float | None = None,
    elsewhere: Callable[[], Awaitable[None]] | None = None,
) -> Woken:
    """Wait for a change after `generation`, the deadline `remaining` seconds away, the `alarm` (a served
    row coming ready with no write), or `elsewhere` (another process's commit) to return.

    One `clock.sleep` per caller, for whichever of deadline and alarm comes first."""
    changed = hub.waiter()  # registered before the checks, so no change slips between them
    by_alarm = alarm is not None and alarm < remaining
    timed_out = False
    try:
        if hub.registrations == registrations and hub.generation == generation:
            sleeper = asyncio.ensure_future(clock.sleep(max(alarm, 0.0) if by_alarm else remaining))
            tasks: set[asyncio.Future[Any]] = {changed, sleeper}
            if elsewhere is not None:
                tasks.add(asyncio.ensure_future(elsewhere()))
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
            timed_out = sleeper.done() and not sleeper.cancelled() and not by_alarm
    finally:
        hub.forget(changed)
    if hub.registrations != registrations:
        return Woken.REGISTRATION
    return Woken.TIMED_OUT if timed_out else Woken.WRITE


# One ask of a poll: what it claimed, and for its wait the alarm (seconds until a served row comes ready
# with no write, if known) and what returns once another process committed (if nothing tells the hub).
Asked = tuple[list[T], float | None, Callable[[], Awaitable[None]] | None]


async def poll(
    hub: WakeHub, clock: Clock, timeout: timedelta, ask: Callable[[], Awaitable[Asked[T]]]
) -> list[T]:
    """`claim_ready`'s loop: ask, and while nothing was claimed wait for a change and ask again, until the
    deadline `timeout` from now."""
    # Taken before the first ask: only a change made after the call began wakes it.
    generation, registrations = hub.generation, hub.registrations
    deadline = clock.monotonic() + timeout.total_seconds()
    woken = False
    while True:
        claimed, alarm, elsewhere = await ask()
        if claimed:
            return claimed
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            # A wake that finds the time up still owes one ask: the clock may have moved between the ask
            # and this check, and a sleep may have come due in between.
            return (await ask())[0] if woken else []
        woken_by = await wait_for_change(hub, clock, generation, registrations, remaining, alarm, elsewhere)
        if woken_by is not Woken.WRITE:
            # at the deadline (a sleep can come due with no write), or after a registration (the caller
            # polls again with its newer served set): one last ask
            return (await ask())[0]
        generation, woken = hub.generation, True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
