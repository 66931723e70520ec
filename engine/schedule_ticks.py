"""When a schedule's ticks fall, and which definitions are refused: croniter reads the cron expression,
zoneinfo the zone; nothing here parses cron itself.

A tick is an instant (UTC). A cron schedule's ticks are its expression's times read on the wall clock of
its zone, so "0 3 * * *" in Europe/Paris is 03:00 Paris time winter and summer. Daylight saving time:

- a wall-clock time that does not exist (the spring gap: 02:30 on the last Sunday of March in Paris) fires
  once, at the first instant after the gap (03:00), as croniter computes it;
- a wall-clock time that happens twice (the autumn fold: 02:30 on the last Sunday of October) fires once,
  at its first occurrence; the second is no tick. A sub-hourly cron schedule thus pauses for the repeated
  hour: use `every` for work that must run at a strict period, which counts seconds since the epoch in UTC
  and knows no DST.

An interval schedule (`every`) ticks at whole multiples of its period since the Unix epoch, so every process
computes the same instants whatever its clock when it started.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from flowdeck.engine import errors, ids
from flowdeck.store import schedules

__all__ = [
    "MAX_NAME_LENGTH",
    "check_spec",
    "latest_at_or_before",
    "next_ticks",
    "scheduled",
    "ticks_between",
    "zone",
]

MAX_NAME_LENGTH = 100
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def zone(name: str) -> ZoneInfo:
    """The IANA zone named; FlowScheduleError when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError) as error:
        raise errors.FlowScheduleError(f"unknown time zone {name!r}", field="timezone") from error


def check_spec(spec: schedules.ScheduleSpec) -> schedules.ScheduleSpec:
    """`spec` when every part of it can tick; FlowScheduleError naming the first part that cannot. (Its
    workflow and inputs are the engine's to judge: `Scheduler.check`.)"""
    problem = ids.id_problem(spec.name)
    if problem is None and ":" in spec.name:
        problem = "must not contain ':' (it is part of the schedule's execution ids)"
    if problem is None and len(spec.name) > MAX_NAME_LENGTH:
        problem = f"must be at most {MAX_NAME_LENGTH} characters"
    if problem is not None:
        raise errors.FlowScheduleError(f"invalid schedule name {spec.name!r}: {problem}", field="name")
    if (spec.cron is None) == (spec.every is None):
        raise errors.FlowScheduleError("give exactly one of cron and every", field="cron")
    if spec.cron is not None and (len(spec.cron.split()) != 5 or not croniter.is_valid(spec.cron)):
        raise errors.FlowScheduleError(
            f"invalid cron expression {spec.cron!r}: five fields (minute hour day month weekday)",
            field="cron",
        )
    if spec.cron is not None and not _fires(spec):
        raise errors.FlowScheduleError(f"the cron expression {spec.cron!r} never fires", field="cron")
    if spec.every is not None and (spec.every < timedelta(seconds=1) or spec.every.microseconds):
        raise errors.FlowScheduleError("every must be a whole number of seconds, at least 1", field="every")
    if spec.catchup_window <= timedelta(0):
        raise errors.FlowScheduleError("the catch-up window must be positive", field="catchup_window")
    zone(spec.timezone)
    return spec


def _fires(spec: schedules.ScheduleSpec) -> bool:
    """Does the cron expression have a time (`0 3 31 2 *`, the 31st of February, has none)?"""
    try:
        croniter(spec.cron, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterError:
        return False
    return True


def _repeated(local: datetime, tz: ZoneInfo) -> bool:
    """Is `local` the second occurrence of a wall-clock time the autumn fold repeats?"""
    first = local.replace(tzinfo=None).replace(tzinfo=tz, fold=0)
    return first.astimezone(UTC) != local.astimezone(UTC)


def _cron_after(spec: schedules.ScheduleSpec, after: datetime, until: datetime, limit: int) -> list[datetime]:
    assert spec.cron is not None
    tz = zone(spec.timezone)
    found: list[datetime] = []
    times = croniter(spec.cron, after.astimezone(tz))
    while len(found) < limit:
        try:
            local: datetime = times.get_next(datetime)
        except (CroniterError, OverflowError):  # no time left before year 9999
            break
        at = local.astimezone(UTC)
        if at > until:
            break
        if at > after and not _repeated(local, tz):
            found.append(at)
    return found


def _every_after(every: timedelta, after: datetime, until: datetime, limit: int) -> list[datetime]:
    period = int(every.total_seconds())
    first = math.floor((after - _EPOCH).total_seconds() / period) + 1
    found: list[datetime] = []
    k = first
    while len(found) < limit:
        try:
            at = _EPOCH + timedelta(seconds=k * period)
        except OverflowError:
            break
        if at > until:
            break
        found.append(at)
        k += 1
    return found


def ticks_between(
    spec: schedules.ScheduleSpec, after: datetime, until: datetime, limit: int = 1000
) -> list[datetime]:
    """The ticks `t` with `after < t <= until`, oldest first, at most `limit`."""
    if spec.every is not None:
        return _every_after(spec.every, after, until, limit)
    return _cron_after(spec, after, until, limit)


def next_ticks(spec: schedules.ScheduleSpec, after: datetime, count: int) -> list[datetime]:
    """The next `count` ticks after `after` within five years (the console's "next runs")."""
    try:
        until = after + timedelta(days=366 * 5)
    except OverflowError:
        until = datetime.max.replace(tzinfo=UTC)
    return ticks_between(spec, after, until, count)


def latest_at_or_before(spec: schedules.ScheduleSpec, at: datetime, after: datetime) -> datetime | None:
    """The newest tick in `(after, at]`, None when there is none."""
    if spec.every is not None:
        period = int(spec.every.total_seconds())
        tick = _EPOCH + timedelta(seconds=math.floor((at - _EPOCH).total_seconds() / period) * period)
        return tick if tick > after else None
    assert spec.cron is not None
    tz = zone(spec.timezone)
    times = croniter(spec.cron, (at + timedelta(seconds=1)).astimezone(tz))
    while True:
        try:
            local: datetime = times.get_prev(datetime)
        except (CroniterError, OverflowError):
            return None
        tick = local.astimezone(UTC)
        if tick <= after:
            return None
        if tick <= at and not _repeated(local, tz):
            return tick


def scheduled(
    name: str,
    workflow_id: str,
    *,
    cron: str | None = None,
    every: timedelta | None = None,
    timezone: str = "UTC",
    inputs: Mapping[str, Any] | None = None,
    overlap: str = "skip",
    catchup: str = "none",
    catchup_window: timedelta = timedelta(days=1),
) -> schedules.ScheduleSpec:
    """A schedule for a flows module's `SCHEDULES` (`flowdeck.scheduled`), checked at once: FlowScheduleError
    names what is wrong. Its workflow and inputs are checked when a process registers it."""
    try:
        spec = schedules.ScheduleSpec(
            name,
            workflow_id,
            cron=cron,
            every=every,
            timezone=timezone,
            inputs=dict(inputs or {}),
            overlap=schedules.Overlap(overlap),
            catchup=schedules.Catchup(catchup),
            catchup_window=catchup_window,
            declared=True,
        )
    except ValueError as error:
        raise errors.FlowScheduleError(f"schedule {name!r}: {error}") from error
    return check_spec(spec)
