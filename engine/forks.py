"""Running a fork's branches side by side: a join (zip, gather, a foreach's items) and a race.

Branches run as tasks while the recorder counts the fork (`forks`), so that their writes go on in tasks of
their own when a branch is cancelled (see `RealRecorder._io`); a fork ends by draining those writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from flowdeck.engine.outcomes import ClaimLost, Parked, StopFor
from flowdeck.store import spi

if TYPE_CHECKING:
    from flowdeck.engine.recorder import RealRecorder

__all__ = ["join", "race", "swallow"]


async def join(rec: RealRecorder, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Every job must finish. The first failure decides at once (the rest are cancelled); parks
    merge, so the attempt waits on every branch's rows."""
    parks: set[str] = set()
    rec.forks += 1
    tasks = [asyncio.ensure_future(job()) for job in jobs]
    waiting = set(tasks)
    try:
        while waiting:
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=tasks.index):
                if task.cancelled():  # an item that gave way to a failed sibling
                    continue
                error = task.exception()
                if isinstance(error, Parked):
                    parks |= error.paths
                elif error is not None:
                    raise error
    finally:
        await _cancel(waiting)
        await rec.drain()
    if parks:
        raise Parked(parks)


async def race(rec: RealRecorder, jobs: Sequence[Callable[[], Awaitable[None]]]) -> int:
    """The first job to produce a value wins (the others are cancelled; their rows are retired when the
    attempt ends). None did: any park → the merged parks; all failed → the last failure."""
    parks: set[str] = set()
    failures: list[BaseException] = []
    rec.forks += 1
    tasks = [asyncio.ensure_future(job()) for job in jobs]
    waiting = set(tasks)
    try:
        while waiting:
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=tasks.index):
                error = task.exception()
                if error is None:
                    return tasks.index(task)
                if isinstance(error, Parked):
                    parks |= error.paths
                elif isinstance(error, ClaimLost | StopFor | spi.FlowStoreError):
                    raise error
                else:
                    failures.append(error)
    finally:
        await _cancel(waiting)
        await rec.drain()
        # A branch that ended in the same turn as the winner is never looked at above; read its
        # outcome so asyncio does not report it as an exception nobody retrieved.
        for task in tasks:
            swallow(task)
    if parks:
        raise Parked(parks)
    raise failures[-1]


async def _cancel(tasks: Iterable[asyncio.Future[Any]]) -> None:
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


def swallow(task: asyncio.Future[Any]) -> None:
    """Read a finished task's outcome, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
