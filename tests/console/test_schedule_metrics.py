"""The schedules in `GET /metrics`' exposition: how many are active and paused, and their recorded ticks
by outcome, read from the store at each scrape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from flowdeck.console import metrics
from flowdeck.store import schedules
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore

TICK = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)


def _samples(text: bytes, family: str) -> dict[str, float]:
    found = {f.name: f for f in text_string_to_metric_families(text.decode())}
    return {next(iter(s.labels.values())): s.value for s in found[family].samples}


async def test_schedules_by_state_and_ticks_by_outcome() -> None:
    store = MemoryStore(ManualClock(TICK))
    for name in ("a", "b", "c"):
        await store.put_schedule(schedules.ScheduleSpec(name, "wf", every=timedelta(minutes=5)))
    await store.set_schedule_paused("b", True)
    for minutes, outcome in ((0, "started"), (5, "skipped"), (10, "skipped"), (15, "buffered")):
        at = TICK + timedelta(minutes=minutes)
        eid = schedules.tick_execution_id("a", at)
        tick = schedules.Tick("a", at, schedules.TickOutcome(outcome), schedules.TickSource.TICK, eid, at)
        await store.record_tick(tick)
    metrics.reset()
    text = await metrics.scrape(store, timedelta(minutes=1))
    assert _samples(text, "flowdeck_schedules") == {"active": 2.0, "paused": 1.0}
    assert _samples(text, "flowdeck_schedule_ticks") == {"buffered": 1.0, "skipped": 2.0, "started": 1.0}
    metrics.reset()
