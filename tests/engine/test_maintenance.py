"""Maintenance chores beside the workers (`engine.maintenance`): a round at once, then one every `every` on
the injected clock, never two at once; a failing round is counted and the next one runs; leaving stops
them."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from flowdeck.engine import maintenance
from flowdeck.store.clock import ManualClock, settle


async def test_a_chore_runs_at_once_then_every_interval_on_the_clock() -> None:
    clock = ManualClock()
    seen: list[float] = []

    async def run() -> None:
        seen.append(clock.monotonic())

    chore = maintenance.Chore("tick", timedelta(minutes=10), run)
    async with maintenance.running([chore], clock):
        await settle()
        assert seen == [1000.0]
        await clock.advance(599)
        assert len(seen) == 1
        await clock.advance(1)
        await clock.advance(600)
        assert seen == [1000.0, 1600.0, 2200.0]
    await clock.advance(6000)
    assert chore.rounds == 3  # stopped with the block


async def test_the_next_round_waits_for_the_previous_one_to_end() -> None:
    clock = ManualClock()
    release = asyncio.Event()
    starts = 0

    async def run() -> None:
        nonlocal starts
        starts += 1
        await release.wait()

    chore = maintenance.Chore("slow", timedelta(seconds=5), run)
    async with maintenance.running([chore], clock):
        await settle()
        await clock.advance(60)
        assert starts == 1  # still in its first round: no second one beside it
        release.set()
        await settle()
        await clock.advance(5)
        assert starts == 2


async def test_a_failing_round_is_counted_and_the_next_one_runs(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    calls = 0

    async def run() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the store went away")

    chore = maintenance.Chore("flaky", timedelta(seconds=30), run)
    async with maintenance.running([chore], clock):
        await settle()
        await clock.advance(30)
    assert (calls, chore.failures, chore.rounds) == (2, 1, 2)
    assert "maintenance flaky failed: RuntimeError: the store went away" in caplog.text


def test_a_chore_needs_a_positive_interval() -> None:
    with pytest.raises(ValueError, match="every must be positive"):
        maintenance.Chore("never", timedelta(0), lambda: asyncio.sleep(0))
