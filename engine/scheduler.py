"""The ticker: starts each schedule's due ticks, once, however many worker processes run one.

Every worker process runs `Scheduler.round` as a maintenance chore (`chore()`, every second of the engine's
clock). A round reads each active schedule and decides each tick after its cursor up to the store's now:

- on time (within `grace` of now): subject to the overlap policy;
- missed (older than `grace`: no worker ran when it fell due): the catch-up policy decides which are
  started (none; the latest; all within the schedule's window), each then subject to the overlap policy.

Two rounds racing over one tick (two processes) agree: the tick's outcome is recorded once
(`FlowStore.record_tick`, the first wins) and a started tick's execution id is deterministic
(`schedules.tick_execution_id`), so its second start is refused by the store (`FlowDuplicateExecution`).
A tick is started before it is recorded started, and the cursor moves only after a round decided every
tick up to its now: a process killed anywhere in a round leaves its ticks to the next round (any
process's), whose start of a tick already started is refused as a duplicate. A round skips, in memory,
every schedule with nothing due and none buffered, so idle schedules cost one read of the list per round
and per process.

Overlap: the previous run is the execution of the schedule's newest started tick. `skip` records a tick
falling while it is unended as skipped; `buffer_one` records the first such tick buffered (started as soon
as the previous run ends) and skips the ones after it while one waits; `allow` starts it anyway. A trigger
now and a backfill are an operator's explicit asks: they start whatever runs.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from flowdeck.engine import errors, maintenance, schedule_ticks
from flowdeck.store import schedules

if TYPE_CHECKING:
    from flowdeck.engine.engine import FlowEngine

__all__ = ["GRACE", "MAX_BACKFILL", "Backfill", "Scheduler"]

logger = logging.getLogger(__name__)

GRACE = timedelta(minutes=1)  # a tick older than this when first seen was missed (the catch-up policy)
MAX_PER_ROUND = 1000  # ticks one schedule decides in one round (a catch-up of "all" goes on next round)
MAX_BACKFILL = 1000
ROUND_CONCURRENCY = 8  # schedules one round decides at once
Outcome = schedules.TickOutcome
Source = schedules.TickSource


@dataclass(frozen=True)
class Backfill:
    """A backfill's ticks (a dry run's: what it would start) and, once run, the executions started."""

    schedule: str
    ticks: tuple[datetime, ...]
    execution_ids: tuple[str, ...]
    started: tuple[str, ...] = ()


@dataclass
class _Round:
    """One schedule's state through a round: the previous run and the buffered tick."""

    schedule: schedules.Schedule
    previous: str | None
    buffered: datetime | None
    started: list[str] = field(default_factory=list)


class Scheduler:
    """Schedules of one engine: their checks, the ticker's round, and the operator's trigger and backfill."""

    def __init__(self, engine: FlowEngine, *, grace: timedelta = GRACE) -> None:
        self.engine = engine
        self.store = engine.store
        self.grace = grace
        # the first tick after each schedule's cursor, by (name, cursor, cron, every, zone): a round skips a
        # schedule with nothing due in memory, so idle schedules cost one list read per round
        self._upcoming: dict[tuple[Any, ...], datetime | None] = {}

    # ------------------------------------------------------------------------------------ definitions

    def check(self, spec: schedules.ScheduleSpec) -> schedules.ScheduleSpec:
        """`spec` when it can tick and this engine would start its workflow with its inputs; else
        FlowScheduleError naming the part (the workflow, an input: as a start would refuse them)."""
        schedule_ticks.check_spec(spec)
        try:
            self.engine.workflows.prepare_start(spec.workflow_id, None, spec.inputs)
        except errors.FlowNotRegistered as error:
            raise errors.FlowScheduleError(str(error), field="workflow_id") from error
        except errors.FlowInputError as error:
            lines = [
                line.strip() for line in str(error).splitlines() if not line.strip().startswith("For further")
            ]
            raise errors.FlowScheduleError(
                f"inputs refused: {'; '.join(filter(None, lines))}", field="inputs"
            ) from error
        return spec

    async def declare(self, specs: Iterable[schedules.ScheduleSpec]) -> None:
        """Upsert the schedules a flows module declares: the declaration wins, the paused state stays."""
        for spec in specs:
            await self.store.put_schedule(self.check(spec))

    async def get(self, name: str) -> schedules.Schedule:
        found = await self.store.get_schedule(name)
        if found is None:
            raise errors.FlowScheduleNotFound(name)
        return found

    # ------------------------------------------------------------------------------------ the ticker

    def chore(self, every: timedelta = timedelta(seconds=1)) -> maintenance.Chore:
        """The ticker as a worker process's maintenance chore."""
        return maintenance.Chore("schedules", every, self.round)

    async def round(self) -> list[str]:
        """Decide every active schedule's due ticks; answers the execution ids started.

        Up to `ROUND_CONCURRENCY` schedules at a time (the store's connections are the limit), in an order
        of this round's own, so two processes' rounds over many due schedules mostly meet different ones
        first rather than racing over each in turn."""
        active = [schedule for schedule in await self.store.list_schedules() if not schedule.paused]
        random.shuffle(active)
        gate = asyncio.Semaphore(ROUND_CONCURRENCY)

        async def one(schedule: schedules.Schedule) -> list[str]:
            async with gate:
                return await self._schedule_round(schedule)

        return [eid for started in await asyncio.gather(*(one(s) for s in active)) for eid in started]

    def _idle(self, schedule: schedules.Schedule, now: datetime) -> bool:
        """Nothing to do for it now: its next tick is later and none waits."""
        if schedule.buffered is not None:
            return False
        spec = schedule.spec
        key = (schedule.name, schedule.cursor, spec.cron, spec.every, spec.timezone)
        if key not in self._upcoming:
            if len(self._upcoming) > 100_000:
                self._upcoming.clear()
            later = schedule_ticks.ticks_between(
                spec, schedule.cursor, schedule.cursor + timedelta(days=3660), 1
            )
            self._upcoming[key] = later[0] if later else None
        upcoming = self._upcoming[key]
        return upcoming is None or upcoming > now

    async def _schedule_round(self, schedule: schedules.Schedule) -> list[str]:
        now = self.store.now()
        if self._idle(schedule, now):
            return []
        state = _Round(schedule, None, schedule.buffered)
        state.previous = await self._previous(state)
        if state.buffered is not None and not await self._unended(state.previous):
            await self._start_and_record(state, state.buffered, Source.TICK)
            state.buffered = None
        for tick, source in self._due(schedule, now):
            await self._decide(state, tick, source)
        await self.store.advance_schedule(schedule.name, now, state.buffered)
        return state.started

    def _due(self, schedule: schedules.Schedule, now: datetime) -> list[tuple[datetime, Source]]:
        """The ticks after the cursor to decide now, oldest first, each with its source."""
        spec, cursor, late = schedule.spec, schedule.cursor, now - self.grace
        missed: list[datetime] = []
        if spec.catchup is schedules.Catchup.LATEST:
            latest = schedule_ticks.latest_at_or_before(spec, late, cursor)
            missed = [] if latest is None else [latest]
        elif spec.catchup is schedules.Catchup.ALL:
            missed = schedule_ticks.ticks_between(
                spec, max(cursor, now - spec.catchup_window), late, MAX_PER_ROUND
            )
        on_time = schedule_ticks.ticks_between(spec, max(cursor, late), now, MAX_PER_ROUND)
        return [(t, Source.CATCHUP) for t in missed] + [(t, Source.TICK) for t in on_time]

    async def _decide(self, state: _Round, tick: datetime, source: Source) -> None:
        spec = state.schedule.spec
        outcome = Outcome.STARTED
        if spec.overlap is not schedules.Overlap.ALLOW and await self._unended(state.previous):
            buffer = spec.overlap is schedules.Overlap.BUFFER_ONE and state.buffered is None
            outcome = Outcome.BUFFERED if buffer else Outcome.SKIPPED
        if outcome is Outcome.STARTED:
            await self._start_and_record(state, tick, source)
            return
        eid = schedules.tick_execution_id(spec.name, tick)
        recorded = await self.store.record_tick(
            schedules.Tick(spec.name, tick, outcome, source, eid, self.store.now())
        )
        if recorded.outcome is Outcome.BUFFERED:
            state.buffered = tick
        elif recorded.outcome is Outcome.SKIPPED:
            logger.info("schedule %s skipped %s", spec.name, eid, extra={"action": "schedule_skip"})

    async def _start_and_record(self, state: _Round, tick: datetime, source: Source) -> None:
        """Start the tick, then record it started. In that order, a process killed between the two
        leaves an execution whose tick the next round decides again (its start refused as a duplicate,
        its record written), never a tick recorded started with no execution. Another round that
        recorded it skipped or buffered meanwhile (it saw the previous run unended) loses to the fact:
        the record says started."""
        eid = await self._start(state, tick, source)
        record = schedules.Tick(state.schedule.name, tick, Outcome.STARTED, source, eid, self.store.now())
        if (await self.store.record_tick(record)).outcome is not Outcome.STARTED:
            await self.store.settle_tick(state.schedule.name, tick, Outcome.STARTED)

    async def _previous(self, state: _Round) -> str | None:
        """The execution of the schedule's newest started tick."""
        latest = await self.store.list_ticks(state.schedule.name, limit=1, outcome=Outcome.STARTED)
        return latest[0].execution_id if latest else None

    async def _unended(self, execution_id: str | None) -> bool:
        if execution_id is None:
            return False
        found = await self.store.get_execution(execution_id)
        return found is not None and not found.status.terminal

    async def _start(self, state: _Round, tick: datetime, source: Source) -> str:
        """Start the tick's execution unless it exists (another process started it: nothing to do)."""
        spec = state.schedule.spec
        eid = schedules.tick_execution_id(spec.name, tick)
        try:
            await self.engine.workflows.start(spec.workflow_id, execution_id=eid, inputs=spec.inputs)
        except errors.FlowDuplicateExecution:
            return eid
        except (errors.FlowNotRegistered, errors.FlowInputError) as error:
            logger.warning("schedule %s could not start %s: %s", spec.name, eid, error)
            return eid
        logger.info(
            "schedule %s started %s (%s)", spec.name, eid, source.value, extra={"action": "schedule_start"}
        )
        state.previous = eid
        state.started.append(eid)
        return eid

    # ------------------------------------------------------------------------------------ operators

    async def trigger(self, name: str) -> str:
        """Start the schedule now, whatever its overlap policy; answers the execution id."""
        schedule = await self.get(name)
        tick = self.store.now().astimezone(UTC).replace(microsecond=0)
        eid = schedules.tick_execution_id(name, tick)
        await self._start_and_record(_Round(schedule, None, None), tick, Source.TRIGGER)
        return eid

    async def backfill(self, name: str, start: datetime, end: datetime, *, dry_run: bool) -> Backfill:
        """The schedule's ticks in `[start, end]`; unless a dry run, each one started (a tick already
        started keeps its execution: its id is the same)."""
        schedule = await self.get(name)
        if end < start:
            raise errors.FlowScheduleError("the backfill's end is before its start", field="end")
        try:
            ticks = schedule_ticks.ticks_between(
                schedule.spec, start - timedelta(microseconds=1), end, MAX_BACKFILL + 1
            )
        except OverflowError:
            raise errors.FlowScheduleError("the backfill's range is out of bounds", field="start") from None
        if len(ticks) > MAX_BACKFILL:
            raise errors.FlowScheduleError(
                f"more than {MAX_BACKFILL} ticks: backfill a shorter range", field="end"
            )
        eids = tuple(schedules.tick_execution_id(name, tick) for tick in ticks)
        done = Backfill(name, tuple(ticks), eids)
        if dry_run:
            return done
        state = _Round(schedule, None, None)
        for tick in ticks:
            await self._start_and_record(state, tick, Source.BACKFILL)
        return Backfill(name, done.ticks, eids, tuple(state.started))
