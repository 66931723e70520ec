"""The docs' worked example (examples/fulfilment/nightly.py): a nightly reconciliation at 03:00 Europe/Paris,
declared beside its flow, upserted at registration, ticking at 03:00 Paris time in winter and in summer, and
reconciling the day before its tick."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from examples.fulfilment import nightly
from flowdeck.console import discovery, runtime
from flowdeck.engine import schedule_ticks, scheduler
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import schedules
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture(autouse=True)
def _discovered_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """What this module discovers is forgotten after it (other tests serve the process's set)."""
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    monkeypatch.setattr(discovery, "_schedules", dict(discovery._schedules))


def test_it_ticks_at_three_in_paris_whatever_the_season() -> None:
    [spec] = discovery.schedules_of("examples.fulfilment.nightly")
    around_the_change = schedule_ticks.ticks_between(
        spec, datetime(2026, 10, 23, 12, tzinfo=UTC), datetime(2026, 10, 27, 12, tzinfo=UTC)
    )
    assert [t.astimezone(nightly.PARIS).strftime("%d %H:%M") for t in around_the_change] == [
        "24 03:00",
        "25 03:00",
        "26 03:00",
        "27 03:00",
    ]
    assert [t.strftime("%H:%M") for t in around_the_change] == ["01:00", "02:00", "02:00", "02:00"]


async def test_the_ticker_starts_the_reconciliation_of_the_day_before() -> None:
    discovery.discover(["examples.fulfilment.nightly"])
    clock = ManualClock(datetime(2026, 12, 4, 1, 59, tzinfo=UTC))
    store = MemoryStore(clock)
    async with FlowEngine(store, clock=clock) as engine:
        await runtime.serve(engine, ["reconciliation"])
        found = await store.get_schedule("nightly-reconciliation")
        assert found is not None
        assert found.spec.declared
        await clock.advance(90)
        [eid] = await scheduler.Scheduler(engine).round()
        assert eid == "sched:nightly-reconciliation:2026-12-04T02:00:00Z"
        detail = await engine.executions.describe(eid)
        for _ in range(200):
            if detail.state.status.terminal:
                break
            await clock.advance(1)
            detail = await engine.executions.describe(eid)
    fields = await store.get_all_fields(eid)
    assert fields["day"].decode() == "2026-12-03"
    assert fields["report"].decode().startswith("2026-12-03: 0 charge(s), 0 cents, 0 refund(s)")
    [tick] = await store.list_ticks("nightly-reconciliation")
    assert tick.outcome is schedules.TickOutcome.STARTED
