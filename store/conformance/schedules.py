"""Schedules: definitions, pause and resume, and one outcome per tick (a Flowdeck addition).

A mixin of `FlowStoreConformance`, so every backend runs them. One *execution* per tick is the idempotent
start's (`create_execution_if_absent`) with the tick's deterministic id: the last case races it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from flowdeck.store import schedules, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import WF1, StoreFixture

NIGHTLY = schedules.ScheduleSpec(
    "nightly", WF1, cron="0 3 * * *", timezone="Europe/Paris", inputs={"region": "eu"}, declared=True
)
TICK = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)


def _tick(fx: StoreFixture, outcome: schedules.TickOutcome, at: datetime = TICK) -> schedules.Tick:
    eid = schedules.tick_execution_id("nightly", at)
    return schedules.Tick("nightly", at, outcome, schedules.TickSource.TICK, eid, fx.clock.now())


class ScheduleCases(StoreCase):
    """A schedule round-trips whole; a redefinition keeps its run-time state; a tick's first outcome
    wins however many callers race; a deleted schedule's executions stay."""

    async def test_put_creates_then_redefines_keeping_state(self, fx: StoreFixture) -> None:
        made = await fx.store.put_schedule(NIGHTLY)
        assert made == schedules.Schedule(NIGHTLY, False, fx.clock.now(), fx.clock.now(), fx.clock.now())
        assert await fx.store.set_schedule_paused("nightly", True) is not None
        await fx.clock.advance(10)
        hourly = schedules.ScheduleSpec("nightly", WF1, every=timedelta(hours=1))
        again = await fx.store.put_schedule(hourly)
        assert (again.spec, again.paused, again.created, again.cursor) == (
            hourly,
            True,
            made.created,
            made.cursor,
        )
        assert await fx.store.get_schedule("nightly") == again
        assert again.updated == fx.clock.now()
        await fx.clock.advance(10)
        same = await fx.store.put_schedule(hourly)
        assert same.updated == again.updated  # the same definition again: nothing changed

    async def test_create_refuses_an_existing_name(self, fx: StoreFixture) -> None:
        assert await fx.store.create_schedule(NIGHTLY) is not None
        other = schedules.ScheduleSpec("nightly", WF1, cron="* * * * *")
        assert await fx.store.create_schedule(other) is None
        found = await fx.store.get_schedule("nightly")
        assert found is not None
        assert found.spec == NIGHTLY

    async def test_list_is_by_name_and_unknown_is_none(self, fx: StoreFixture) -> None:
        for name in ("b", "a", "c"):
            await fx.store.put_schedule(schedules.ScheduleSpec(name, WF1, every=timedelta(minutes=5)))
        assert [s.name for s in await fx.store.list_schedules()] == ["a", "b", "c"]
        assert await fx.store.get_schedule("nope") is None
        assert await fx.store.set_schedule_paused("nope", True) is None
        assert await fx.store.delete_schedule("nope") is False

    async def test_resume_moves_the_cursor_to_now_and_drops_the_buffer(self, fx: StoreFixture) -> None:
        made = await fx.store.put_schedule(NIGHTLY)
        await fx.store.advance_schedule("nightly", made.cursor, TICK)
        await fx.store.set_schedule_paused("nightly", True)
        await fx.clock.advance(3600)
        resumed = await fx.store.set_schedule_paused("nightly", False)
        assert resumed is not None
        assert (resumed.paused, resumed.cursor, resumed.buffered) == (False, fx.clock.now(), None)

    async def test_the_cursor_never_goes_back(self, fx: StoreFixture) -> None:
        made = await fx.store.put_schedule(NIGHTLY)
        later = made.cursor + timedelta(hours=1)
        await fx.store.advance_schedule("nightly", later, TICK)
        await fx.store.advance_schedule("nightly", made.cursor, None)
        found = await fx.store.get_schedule("nightly")
        assert found is not None
        assert (found.cursor, found.buffered) == (later, None)

    async def test_a_tick_has_one_outcome_however_many_race(self, fx: StoreFixture) -> None:
        await fx.store.put_schedule(NIGHTLY)
        outcomes = [schedules.TickOutcome.STARTED, schedules.TickOutcome.SKIPPED] * 5
        answers = await asyncio.gather(*(fx.store.record_tick(_tick(fx, o)) for o in outcomes))
        assert len(set(answers)) == 1
        assert [t.outcome for t in await fx.store.list_ticks("nightly")] == [answers[0].outcome]

    async def test_ticks_newest_first_settled_and_counted(self, fx: StoreFixture) -> None:
        await fx.store.put_schedule(NIGHTLY)
        for hours, outcome in enumerate(("started", "skipped", "buffered")):
            await fx.store.record_tick(
                _tick(fx, schedules.TickOutcome(outcome), TICK + timedelta(hours=hours))
            )
        await fx.store.settle_tick("nightly", TICK + timedelta(hours=2), schedules.TickOutcome.STARTED)
        listed = await fx.store.list_ticks("nightly", limit=2)
        assert [(t.tick, t.outcome.value) for t in listed] == [
            (TICK + timedelta(hours=2), "started"),
            (TICK + timedelta(hours=1), "skipped"),
        ]
        started = await fx.store.list_ticks("nightly", limit=5, outcome=schedules.TickOutcome.STARTED)
        assert [t.tick for t in started] == [TICK + timedelta(hours=2), TICK]
        counted = await fx.store.count_ticks()
        assert dict(counted) == {"started": 2, "skipped": 1, "buffered": 0}

    async def test_delete_forgets_ticks_and_keeps_executions(self, fx: StoreFixture) -> None:
        await fx.store.put_schedule(NIGHTLY)
        tick = await fx.store.record_tick(_tick(fx, schedules.TickOutcome.STARTED))
        await fx.mk_execution(tick.execution_id)
        assert await fx.store.delete_schedule("nightly") is True
        assert await fx.store.get_schedule("nightly") is None
        assert await fx.store.list_ticks("nightly") == []
        assert await fx.store.get_execution(tick.execution_id) is not None

    async def test_one_execution_per_tick_under_racing_starts(self, fx: StoreFixture) -> None:
        eid = schedules.tick_execution_id("nightly", TICK)
        created = await asyncio.gather(
            *(
                fx.store.create_execution_if_absent(eid, WF1, "", spi.Running(), fx.created(eid))
                for _ in range(8)
            )
        )
        assert sorted(created) == [False] * 7 + [True]
