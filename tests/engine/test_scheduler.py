"""The ticker (`engine.scheduler`): due ticks started once, the overlap and catch-up policies, DST, trigger
now and backfill; time moves only through the injected clock. Memory and PostgreSQL (engine_support)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flowdeck.engine import errors, schedule_ticks, scheduler
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.store import schedules, spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import sqlite_alias  # noqa: F401  (postgres_alias: conftest)

START = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)  # 13:00 in Paris
reconcile = Flow.init("reconcile").input("region", str).step("count", lambda ctx: 1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


async def _engine(store: spi.FlowStore, clock: ManualClock) -> FlowEngine:
    engine = FlowEngine(store, clock=clock)
    await engine.register("reconcile", reconcile)
    return engine


def _spec(**changes: Any) -> schedules.ScheduleSpec:
    base: dict[str, Any] = {"cron": "0 3 * * *", "timezone": "Europe/Paris", "inputs": {"region": "eu"}}
    return schedule_ticks.scheduled("nightly", "reconcile", **{**base, **changes})


async def _at(clock: ManualClock, when: datetime) -> None:
    await clock.advance(when - clock.now())


async def _end(store: spi.FlowStore, eid: str) -> None:
    """End an execution as its worker would (claimed, then finished Completed)."""
    found = await store.get_execution(eid)
    assert found is not None
    served = frozenset({("reconcile", found.hash)})
    [handle] = await store.claim_ready(served, "x", timedelta(seconds=30), 1, timedelta(0))
    assert handle.state.execution_id == eid
    ending = spi.Event(spi.EventKind.COMPLETED, "reconcile", eid, store.now(), {})
    assert await handle.finish(spi.Terminal(spi.Completed(), ending)) == spi.StatusOutcome.APPLIED


async def test_a_nightly_tick_starts_once_at_three_paris_time(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec()])
    assert await ticker.round() == []
    await _at(clock, datetime(2026, 12, 4, 2, 0, 5, tzinfo=UTC))  # 03:00:05 in Paris (UTC+1)
    assert await ticker.round() == ["sched:nightly:2026-12-04T02:00:00Z"]
    assert await ticker.round() == []  # the cursor moved: nothing twice
    fields = await store.get_all_fields("sched:nightly:2026-12-04T02:00:00Z")
    assert fields["region"].value == '"eu"'  # stored as JSON
    [tick] = await store.list_ticks("nightly")
    assert (tick.outcome, tick.source) == (schedules.TickOutcome.STARTED, schedules.TickSource.TICK)


async def test_two_tickers_racing_start_each_tick_once(store: spi.FlowStore, clock: ManualClock) -> None:
    one, two = (
        scheduler.Scheduler(await _engine(store, clock)),
        scheduler.Scheduler(await _engine(store, clock)),
    )
    await one.declare([_spec(cron="*/5 * * * *", overlap="allow")])
    await _at(clock, START + timedelta(minutes=5))
    started = await asyncio.gather(one.round(), two.round(), one.round(), two.round())
    assert sorted(e for s in started for e in s) == ["sched:nightly:2026-12-03T12:05:00Z"]
    page = await store.list_executions("reconcile", limit=10)
    assert [e.execution_id for e in page.items] == ["sched:nightly:2026-12-03T12:05:00Z"]


async def test_skip_records_a_tick_whose_previous_run_is_unended(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec(cron="*/5 * * * *")])
    await _at(clock, START + timedelta(minutes=5))
    assert len(await ticker.round()) == 1
    await _at(clock, START + timedelta(minutes=10))
    assert await ticker.round() == []
    outcomes = [(t.tick.minute, t.outcome.value) for t in await store.list_ticks("nightly")]
    assert outcomes == [(10, "skipped"), (5, "started")]


async def test_buffer_one_waits_then_starts_when_the_previous_ends(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec(cron="*/5 * * * *", overlap="buffer_one")])
    for minutes in (5, 10, 15):
        await _at(clock, START + timedelta(minutes=minutes))
        await ticker.round()
    outcomes = [(t.tick.minute, t.outcome.value) for t in await store.list_ticks("nightly")]
    assert outcomes == [(15, "skipped"), (10, "buffered"), (5, "started")]
    await _end(store, "sched:nightly:2026-12-03T12:05:00Z")
    assert await ticker.round() == ["sched:nightly:2026-12-03T12:10:00Z"]
    assert (await store.list_ticks("nightly"))[1].outcome is schedules.TickOutcome.STARTED


@pytest.mark.parametrize(
    ("catchup", "expected"),
    [("none", []), ("latest", ["12:40"]), ("all", ["12:20", "12:25", "12:30", "12:35", "12:40"])],
)
async def test_catch_up_after_downtime(
    store: spi.FlowStore, clock: ManualClock, catchup: str, expected: list[str]
) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    spec = _spec(cron="*/5 * * * *", overlap="allow", catchup=catchup, catchup_window=timedelta(minutes=25))
    await ticker.declare([spec])
    await _at(clock, START + timedelta(minutes=40, seconds=90))  # down 40 minutes: 12:40 is 90 s late
    started = await ticker.round()
    assert [e.split("T")[1][:5] for e in started] == expected


async def test_the_autumn_fold_fires_once_and_the_spring_gap_shifts(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    spec = _spec(cron="30 2 * * *")
    autumn = schedule_ticks.ticks_between(
        spec, datetime(2026, 10, 24, tzinfo=UTC), datetime(2026, 10, 27, tzinfo=UTC)
    )
    assert [t.strftime("%d %H:%M") for t in autumn] == ["24 00:30", "25 00:30", "26 01:30"]
    spring = schedule_ticks.ticks_between(
        spec, datetime(2026, 3, 28, tzinfo=UTC), datetime(2026, 3, 30, tzinfo=UTC)
    )
    assert [t.strftime("%d %H:%M") for t in spring] == ["28 01:30", "29 01:00"]  # 03:00 CEST: after the gap


async def test_paused_schedules_do_not_tick_and_resume_does_not_catch_up(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec(cron="*/5 * * * *", catchup="all")])
    await store.set_schedule_paused("nightly", True)
    await _at(clock, START + timedelta(minutes=30))
    assert await ticker.round() == []
    await store.set_schedule_paused("nightly", False)
    assert await ticker.round() == []
    await ticker.declare([_spec(cron="*/5 * * * *")])  # a redeclaration keeps it active
    found = await store.get_schedule("nightly")
    assert found is not None
    assert found.paused is False


async def test_trigger_now_and_backfill_with_its_dry_run(store: spi.FlowStore, clock: ManualClock) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec()])
    assert await ticker.trigger("nightly") == "sched:nightly:2026-12-03T12:00:00Z"
    start, end = datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 12, 1, 23, tzinfo=UTC)
    dry = await ticker.backfill("nightly", start, end, dry_run=True)
    assert [t.day for t in dry.ticks] == [29, 30, 1]
    assert dry.started == ()
    assert await store.get_execution(dry.execution_ids[0]) is None
    done = await ticker.backfill("nightly", start, end, dry_run=False)
    assert done.started == dry.execution_ids
    again = await ticker.backfill("nightly", start, end, dry_run=False)
    assert again.started == ()  # the same ids: nothing started twice


async def test_bad_definitions_are_refused_naming_the_part(store: spi.FlowStore, clock: ManualClock) -> None:
    ticker = scheduler.Scheduler(await _engine(store, clock))
    cases = [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": None, "every": None}, "cron"),
        ({"inputs": {"region": 3}}, "inputs"),
        ({"inputs": {"nope": 1}}, "inputs"),
    ]
    for changes, field in cases:
        with pytest.raises(errors.FlowScheduleError) as refused:
            ticker.check(_spec(**changes)) if field == "inputs" else _spec(**changes)
        assert refused.value.field == field
    with pytest.raises(errors.FlowScheduleError) as refused:
        ticker.check(schedule_ticks.scheduled("n", "unknown", every=timedelta(minutes=1)))
    assert refused.value.field == "workflow_id"
    assert await store.list_schedules() == []


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_alias(request: pytest.FixtureRequest) -> str:
    """A migrated database that two stores (two processes' worth of connections) share."""
    alias: str = request.getfixturevalue(f"{request.param}_alias")
    request.getfixturevalue("database_access")
    return alias


async def test_two_processes_on_one_database_start_every_tick_once(
    shared_alias: str, clock: ManualClock
) -> None:
    """Two stores on one database (each its own connections, as two worker processes have), one clock:
    their tickers race over an hour of minute ticks, round for round; every tick has one outcome and one
    execution."""
    one, two = DjangoStore(shared_alias, clock), DjangoStore(shared_alias, clock)
    one.reset()
    try:
        first, second = (
            scheduler.Scheduler(await _engine(one, clock)),
            scheduler.Scheduler(await _engine(two, clock)),
        )
        await first.declare([_spec(cron="* * * * *", overlap="allow")])
        started: list[str] = []
        for minute in range(1, 61):
            await _at(clock, START + timedelta(minutes=minute, seconds=1))
            for batch in await asyncio.gather(first.round(), second.round()):
                started.extend(batch)
        assert len(started) == len(set(started)) == 60
        page = await one.list_executions("reconcile", limit=100)
        assert sorted(e.execution_id for e in page.items) == sorted(started)
        assert len(await one.list_ticks("nightly", limit=100)) == 60
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_round_killed_between_a_start_and_its_record_is_finished_by_the_next(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """A process killed after starting a tick and before recording it (the cursor not moved): the next
    round decides the tick again, its start is refused as a duplicate, and the record is written."""
    engine = await _engine(store, clock)
    ticker = scheduler.Scheduler(engine)
    await ticker.declare([_spec()])
    await _at(clock, datetime(2026, 12, 4, 2, 0, 5, tzinfo=UTC))
    eid = schedules.tick_execution_id("nightly", datetime(2026, 12, 4, 2, 0, tzinfo=UTC))
    await engine.workflows.start("reconcile", execution_id=eid, inputs={"region": "eu"})  # then killed
    assert await store.list_ticks("nightly") == []
    assert await ticker.round() == []  # nothing new started
    [tick] = await store.list_ticks("nightly")
    assert (tick.execution_id, tick.outcome) == (eid, schedules.TickOutcome.STARTED)


async def test_a_tick_one_round_skipped_while_another_started_it_reads_started(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """Two rounds deciding differently (one saw the previous run unended): the record ends as the fact."""
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec()])
    tick = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)
    eid = schedules.tick_execution_id("nightly", tick)
    skipped = schedules.Tick(
        "nightly", tick, schedules.TickOutcome.SKIPPED, schedules.TickSource.TICK, eid, START
    )
    await store.record_tick(skipped)
    await _at(clock, tick + timedelta(seconds=5))
    assert await ticker.round() == [eid]
    [recorded] = await store.list_ticks("nightly")
    assert recorded.outcome is schedules.TickOutcome.STARTED


async def test_skip_holds_however_many_ticks_were_skipped(store: spi.FlowStore, clock: ManualClock) -> None:
    """A run longer than sixty ticks: the previous run is the newest *started* tick's, not the newest tick."""
    ticker = scheduler.Scheduler(await _engine(store, clock))
    await ticker.declare([_spec(cron="* * * * *")])
    await _at(clock, START + timedelta(minutes=1, seconds=1))
    assert len(await ticker.round()) == 1
    for minute in range(2, 63):
        await _at(clock, START + timedelta(minutes=minute, seconds=1))
        assert await ticker.round() == [], minute
    counted = await store.count_ticks()
    assert (counted[schedules.TickOutcome.STARTED], counted[schedules.TickOutcome.SKIPPED]) == (1, 61)
