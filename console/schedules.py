"""Schedules as the console operates them: the verbs every surface shares (create, pause, resume, trigger
now, delete, backfill), each recorded in the activity log with who did it, and what a page or an answer
shows of a schedule (`Shown`: its next runs, its last runs with each execution's state).

The API (`api/schedules.py`), the CLI (`flowdeck schedule …`) and the pages (`views/schedules.py`) call
these, naming their source; the checks are the engine's (`engine.scheduler.Scheduler.check`), so a
definition refused by one surface is refused by all, and nothing is recorded in the store for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flowdeck.console import activity, runtime, states
from flowdeck.engine import errors, schedule_ticks, scheduler
from flowdeck.store import schedules

__all__ = [
    "NEXT_RUNS",
    "Run",
    "Shown",
    "backfill",
    "create",
    "delete",
    "pause",
    "show",
    "shown_all",
    "trigger",
]

NEXT_RUNS = 5
LAST_RUNS = 10


@dataclass(frozen=True)
class Run:
    """One recorded tick, with its execution's state word (None while it does not exist: skipped)."""

    tick: schedules.Tick
    state: str | None


@dataclass(frozen=True)
class Shown:
    schedule: schedules.Schedule
    next_runs: tuple[datetime, ...]
    last_runs: tuple[Run, ...]


async def _ticker() -> scheduler.Scheduler:
    return scheduler.Scheduler(await runtime.engine())


async def show(name: str, *, last: int = LAST_RUNS) -> Shown:
    """The schedule named with its next runs and last runs; FlowScheduleNotFound when there is none."""
    ticker = await _ticker()
    return await _shown(ticker, await ticker.get(name), last)


async def shown_all(*, last: int = 3) -> list[Shown]:
    ticker = await _ticker()
    return [await _shown(ticker, found, last) for found in await ticker.store.list_schedules()]


async def _shown(ticker: scheduler.Scheduler, found: schedules.Schedule, last: int) -> Shown:
    after = max(found.cursor, ticker.store.now())
    upcoming = () if found.paused else tuple(schedule_ticks.next_ticks(found.spec, after, NEXT_RUNS))
    runs = []
    for tick in await ticker.store.list_ticks(found.name, limit=last):
        state = await ticker.store.get_execution(tick.execution_id)
        runs.append(Run(tick, None if state is None else states.standing_of(state).state.value))
    return Shown(found, upcoming, tuple(runs))


async def create(spec: schedules.ScheduleSpec, actor: str, source: str) -> schedules.Schedule:
    """A new schedule, checked as the engine would start it; FlowScheduleExists when the name is taken."""
    async with activity.recording(
        actor, source, "schedule:create", workflow_id=spec.workflow_id, schedule=spec.name
    ):
        ticker = await _ticker()
        made = await ticker.store.create_schedule(ticker.check(spec))
        if made is None:
            raise errors.FlowScheduleExists(spec.name)
        return made


async def pause(name: str, paused: bool, actor: str, source: str) -> schedules.Schedule:
    """Pause, or resume (what fell due while paused is not caught up: backfill does that)."""
    action = "schedule:pause" if paused else "schedule:resume"
    async with activity.recording(actor, source, action, schedule=name) as act:
        ticker = await _ticker()
        changed = await ticker.store.set_schedule_paused(name, paused)
        if changed is None:
            raise errors.FlowScheduleNotFound(name)
        act.workflow_id = changed.spec.workflow_id
        return changed


async def trigger(name: str, actor: str, source: str) -> str:
    """Start the schedule's workflow now; answers the execution id."""
    async with activity.recording(actor, source, "schedule:trigger", schedule=name) as act:
        eid = await (await _ticker()).trigger(name)
        act.execution_ids = [eid]
        return eid


async def delete(name: str, actor: str, source: str) -> None:
    """Forget the schedule and its tick records; its executions stay."""
    async with activity.recording(actor, source, "schedule:delete", schedule=name):
        if not await (await _ticker()).store.delete_schedule(name):
            raise errors.FlowScheduleNotFound(name)


async def backfill(
    name: str, start: datetime, end: datetime, *, dry_run: bool, actor: str, source: str
) -> scheduler.Backfill:
    """The schedule's ticks in [start, end]; unless a dry run, started (a tick already started keeps its
    one execution)."""
    action = "schedule:backfill:dry-run" if dry_run else "schedule:backfill"
    window = {"start": start.isoformat(), "end": end.isoformat()}
    async with activity.recording(actor, source, action, schedule=name, **window) as act:
        done = await (await _ticker()).backfill(name, start, end, dry_run=dry_run)
        act.detail["ticks"] = len(done.ticks)
        act.execution_ids = list(done.started)
        return done
