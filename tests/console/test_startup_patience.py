"""A process starting waits out a store that answers "try again" (`runtime._patiently`, which `runtime.serve`
runs each registration through): SQLite's "database is locked" while another process writes, or a
PostgreSQL restart, must not make `flowdeck_workers` exit (CI saw it exit beside a busy web process). What
is not retryable fails at once, and patience has an end. On the injected clock."""

from __future__ import annotations

import asyncio

import pytest

from flowdeck.console import runtime
from flowdeck.store.clock import ManualClock
from flowdeck.store.spi import FlowStoreError


class Flaky:
    """A write the store refuses `times` times with `error`, then answers "done"."""

    def __init__(self, times: int, error: FlowStoreError) -> None:
        self.left, self.error, self.calls = times, error, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            raise self.error
        return "done"


async def _run_out(clock: ManualClock, task: asyncio.Task[str]) -> None:
    while not task.done():
        await clock.advance(1)


async def test_a_retryable_refusal_is_waited_out() -> None:
    clock = ManualClock()
    write = Flaky(5, FlowStoreError("database is locked", retryable=True))
    task = asyncio.ensure_future(runtime._patiently(clock, write))
    await _run_out(clock, task)
    assert task.result() == "done"
    assert write.calls == 6


async def test_a_refusal_that_is_not_retryable_fails_at_once() -> None:
    clock = ManualClock()
    write = Flaky(1, FlowStoreError("no such table: flowstore_workflow"))
    with pytest.raises(FlowStoreError, match="no such table"):
        await runtime._patiently(clock, write)
    assert write.calls == 1
    assert clock.pending_sleeps() == 0


async def test_patience_ends() -> None:
    clock = ManualClock()
    write = Flaky(10_000, FlowStoreError("database is locked", retryable=True))
    start = clock.monotonic()
    task = asyncio.ensure_future(runtime._patiently(clock, write))
    await _run_out(clock, task)
    with pytest.raises(FlowStoreError, match="database is locked"):
        task.result()
    assert runtime.STARTUP_PATIENCE - 2 <= clock.monotonic() - start <= runtime.STARTUP_PATIENCE + 1
