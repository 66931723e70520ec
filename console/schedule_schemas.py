"""The REST API's wire shapes of schedules (camelCase on the wire, like `schemas`), and their builders."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from flowdeck.console import schedules as console_schedules
from flowdeck.console.schemas import Text, Wire, WireRequest
from flowdeck.engine import ids, schedule_ticks
from flowdeck.store import schedules

__all__ = [
    "BackfillRequest",
    "BackfillResponse",
    "RunDto",
    "ScheduleDto",
    "ScheduleRequest",
    "TriggerResponse",
    "schedule_of",
]

# An instant in a request: ISO 8601 with its offset (pydantic's lax parse of a string, in a strict body).
Instant = Annotated[datetime, Field(strict=False)]


class ScheduleRequest(WireRequest):
    """A new schedule: exactly one of `cron` (5 fields, read in `timezone`) and `everySeconds`."""

    name: Annotated[str, Field(min_length=1, max_length=schedule_ticks.MAX_NAME_LENGTH)]
    workflow_id: Annotated[str, Field(min_length=1, max_length=ids.MAX_ID_LENGTH)]
    cron: Text | None = None
    every_seconds: Annotated[int, Field(ge=1, le=366 * 86400)] | None = None
    timezone: Annotated[str, Field(max_length=64)] = "UTC"
    inputs: dict[str, Any] = {}
    overlap: Literal["skip", "buffer_one", "allow"] = "skip"
    catchup: Literal["none", "latest", "all"] = "none"
    catchup_window_seconds: Annotated[int, Field(ge=1, le=366 * 86400)] = 86400

    def spec(self) -> schedules.ScheduleSpec:
        every = None if self.every_seconds is None else timedelta(seconds=self.every_seconds)
        return schedules.ScheduleSpec(
            self.name,
            self.workflow_id,
            cron=self.cron,
            every=every,
            timezone=self.timezone,
            inputs=self.inputs,
            overlap=schedules.Overlap(self.overlap),
            catchup=schedules.Catchup(self.catchup),
            catchup_window=timedelta(seconds=self.catchup_window_seconds),
        )


class RunDto(Wire):
    """A recorded tick: its outcome (started, skipped, buffered), where it came from (tick, catchup,
    trigger, backfill), its execution and that execution's state (null: none exists, a skipped tick)."""

    tick: datetime
    outcome: str
    source: str
    execution_id: str
    state: str | None


class ScheduleDto(Wire):
    name: str
    workflow_id: str
    cron: str | None
    every_seconds: int | None
    timezone: str
    inputs: dict[str, Any]
    overlap: str
    catchup: str
    catchup_window_seconds: int
    declared: bool
    paused: bool
    created: datetime
    updated: datetime
    next_runs: list[datetime]
    last_runs: list[RunDto]


class BackfillRequest(WireRequest):
    """The ticks in [start, end] (at most 1,000); with `dryRun` (the default) only listed."""

    start: Instant
    end: Instant
    dry_run: bool = True


class BackfillResponse(Wire):
    schedule: str
    dry_run: bool
    ticks: list[datetime]
    execution_ids: list[str]
    started: list[str]


class TriggerResponse(Wire):
    execution_id: str


def schedule_of(shown: console_schedules.Shown) -> ScheduleDto:
    spec = shown.schedule.spec
    return ScheduleDto(
        name=spec.name,
        workflow_id=spec.workflow_id,
        cron=spec.cron,
        every_seconds=None if spec.every is None else int(spec.every.total_seconds()),
        timezone=spec.timezone,
        inputs=dict(spec.inputs),
        overlap=spec.overlap.value,
        catchup=spec.catchup.value,
        catchup_window_seconds=int(spec.catchup_window.total_seconds()),
        declared=spec.declared,
        paused=shown.schedule.paused,
        created=shown.schedule.created,
        updated=shown.schedule.updated,
        next_runs=list(shown.next_runs),
        last_runs=[
            RunDto(
                tick=run.tick.tick,
                outcome=run.tick.outcome.value,
                source=run.tick.source.value,
                execution_id=run.tick.execution_id,
                state=run.state,
            )
            for run in shown.last_runs
        ],
    )
