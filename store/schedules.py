"""Schedules as the store keeps them: a definition (`ScheduleSpec`), its run-time state (`Schedule`: paused,
the cursor, a buffered tick) and what became of each tick (`Tick`).

The store judges none of a definition (its cron, its zone, its workflow): the engine does that before a
definition reaches it (`engine.schedule_ticks.check_spec`). A tick is an instant in UTC; its execution id
is `tick_execution_id(name, tick)`, the same for every process that computes it, so the store's idempotent
start makes a second start of one tick impossible.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "Catchup",
    "Overlap",
    "Schedule",
    "ScheduleSpec",
    "Tick",
    "TickOutcome",
    "TickSource",
    "tick_execution_id",
    "tick_of_execution_id",
]

EXECUTION_PREFIX = "sched:"


class Overlap(enum.StrEnum):
    """What a tick does while the schedule's previous run is unended."""

    SKIP = "skip"  # recorded as skipped
    BUFFER_ONE = "buffer_one"  # waits, at most one; later ones are skipped
    ALLOW = "allow"  # starts anyway


class Catchup(enum.StrEnum):
    """What the ticks missed while no worker ran become (ticks older than the ticker's grace)."""

    NONE = "none"  # none started
    LATEST = "latest"  # the newest missed one started
    ALL = "all"  # every missed one within the schedule's window, oldest first


class TickOutcome(enum.StrEnum):
    STARTED = "started"
    SKIPPED = "skipped"
    BUFFERED = "buffered"


class TickSource(enum.StrEnum):
    TICK = "tick"  # on time
    CATCHUP = "catchup"  # missed while no worker ran, started after
    TRIGGER = "trigger"  # an operator's trigger now
    BACKFILL = "backfill"  # an operator's backfill of a range


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule's definition: exactly one of `cron` (5 fields, read in `timezone`) and `every` (a fixed
    interval, its ticks whole multiples of it since the Unix epoch, so every process computes the same)."""

    name: str
    workflow_id: str
    cron: str | None = None
    every: timedelta | None = None
    timezone: str = "UTC"
    inputs: Mapping[str, Any] = field(default_factory=dict)
    overlap: Overlap = Overlap.SKIP
    catchup: Catchup = Catchup.NONE
    catchup_window: timedelta = timedelta(days=1)
    declared: bool = False  # from a flows module's SCHEDULES (its definition wins at each registration)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "workflow_id": self.workflow_id,
            "cron": self.cron,
            "every": None if self.every is None else self.every.total_seconds(),
            "timezone": self.timezone,
            "inputs": dict(self.inputs),
            "overlap": self.overlap.value,
            "catchup": self.catchup.value,
            "catchup_window": self.catchup_window.total_seconds(),
            "declared": self.declared,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScheduleSpec:
        every = data.get("every")
        return cls(
            name=data["name"],
            workflow_id=data["workflow_id"],
            cron=data.get("cron"),
            every=None if every is None else timedelta(seconds=every),
            timezone=data.get("timezone", "UTC"),
            inputs=dict(data.get("inputs") or {}),
            overlap=Overlap(data.get("overlap", "skip")),
            catchup=Catchup(data.get("catchup", "none")),
            catchup_window=timedelta(seconds=data.get("catchup_window", 86400)),
            declared=bool(data.get("declared", False)),
        )


@dataclass(frozen=True)
class Schedule:
    """A schedule as stored: its definition and its run-time state. `cursor` is the newest tick the
    tickers have considered (every tick at or before it is decided); `buffered` is a tick waiting for the
    previous run to end (buffer_one)."""

    spec: ScheduleSpec
    paused: bool
    cursor: datetime
    created: datetime
    updated: datetime
    buffered: datetime | None = None

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Tick:
    """What became of one tick of one schedule. One per (schedule, tick): the first recorded wins."""

    schedule: str
    tick: datetime
    outcome: TickOutcome
    source: TickSource
    execution_id: str
    recorded: datetime


def iso_tick(tick: datetime) -> str:
    """The tick's instant in UTC, to the second: `2026-12-04T02:00:00Z`."""
    return tick.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def tick_execution_id(name: str, tick: datetime) -> str:
    """The one execution id of schedule `name`'s tick: `sched:<name>:<tick in UTC>`."""
    return f"{EXECUTION_PREFIX}{name}:{iso_tick(tick)}"


_ID = re.compile(r"^sched:(?P<name>[^:]+):(?P<tick>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$")


def tick_of_execution_id(execution_id: str) -> tuple[str, datetime] | None:
    """The schedule and tick an execution id names, None for an id no schedule made (the console's link
    from an execution back to its schedule)."""
    found = _ID.match(execution_id)
    if found is None:
        return None
    tick = datetime.strptime(found["tick"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return found["name"], tick
