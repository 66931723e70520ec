"""Maintenance beside the workers: chores a worker process runs every so often (retention's purge, for
one), each in its own named task, on the engine's clock.

The engine knows nothing of what a chore does: the process that runs the workers wires it (`flowdeck_workers`
wires the console's retention). A chore's first round starts at once, and each next one `every` after the
previous one ended, so two rounds of one chore never overlap. A round that raises is logged and counted;
the next round tries again, and the workers never stop for it. Leaving `running` cancels a round midway:
what it finished stays done (a chore works in steps that each stand on their own, such as the purge's
batches).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from flowdeck.store.clock import Clock

__all__ = ["Chore", "running"]

logger = logging.getLogger(__name__)


@dataclass
class Chore:
    """A periodic task: `run` every `every`. `rounds` and `failures` count what it did (for tests, logs)."""

    name: str
    every: timedelta
    run: Callable[[], Awaitable[object]]
    rounds: int = field(default=0, compare=False)
    failures: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.every <= timedelta(0):
            raise ValueError(
                f"chore {self.name!r}: every must be positive (got {self.every.total_seconds():g}s)"
            )


async def _rounds(chore: Chore, clock: Clock) -> None:
    while True:
        try:
            await chore.run()
        except Exception as error:  # any failure: logged, and the next round tries again
            chore.failures += 1
            logger.warning(
                "maintenance %s failed: %s: %s",
                chore.name,
                type(error).__name__,
                error,
                exc_info=error,
                extra={"action": "maintenance_failed", "chore": chore.name},
            )
        chore.rounds += 1
        await clock.sleep(chore.every.total_seconds())


@contextlib.asynccontextmanager
async def running(chores: Sequence[Chore], clock: Clock) -> AsyncIterator[None]:
    """Run every chore while the block runs; cancel them on the way out."""
    tasks = [asyncio.create_task(_rounds(c, clock), name=f"flowdeck:maintenance:{c.name}") for c in chores]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
