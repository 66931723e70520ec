"""A deferred start (`run_after`, store.deferral): nothing runs before its time and everything after it, on
every store; a naive datetime is refused with nothing written; a time already past defers nothing."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from flowdeck.engine import errors
from flowdeck.engine.flow import Flow
from flowdeck.store import deferral, spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until


def job(ran: list[str]) -> Flow:
    return Flow.init("job").step("run", lambda ctx: ran.append(ctx.execution_id))


async def test_a_deferred_start_runs_once_its_time_comes(store: spi.FlowStore, clock: ManualClock) -> None:
    ran: list[str] = []
    async with make_engine(store, clock, [job(ran)]) as engine:
        later = await engine.workflows.start("job", run_after=clock.now() + timedelta(hours=2))
        now = await engine.workflows.start("job", run_after=clock.now() - timedelta(seconds=1))
        assert (await until(store, now)).status == spi.Completed()
        state = await store.get_execution(later)
        assert (state.status, set(state.waits)) == (spi.Running(), {deferral.PATH})
        assert ran == [now]  # the deferred one waits on the clock, not on anything else
        await clock.advance(2 * 3600)
        assert (await until(store, later)).status == spi.Completed()
    assert ran == [now, later]
    assert (await store.get_execution(later)).waits == {}


@pytest.mark.parametrize("when", [datetime(2030, 1, 1), "2030-01-01T00:00:00Z", 1893456000])
async def test_a_run_after_that_is_no_instant_is_refused(
    store: spi.FlowStore, clock: ManualClock, when: object
) -> None:
    async with make_engine(store, clock, [job([])]) as engine:
        with pytest.raises(errors.FlowInvalidRunAfter, match="timezone-aware"):
            await engine.workflows.start("job", execution_id="refused", run_after=when)  # type: ignore[arg-type]
    assert await store.get_execution("refused") is None
