"""The Django store's schedules (`flowstore_schedule`, `flowstore_schedule_tick`), through the ORM on the
transaction of the store's threads: work functions, and `ScheduleStore`, the verbs `DjangoStore` inherits.

`record_tick` is an insert guarded by the unique (schedule, tick) constraint: of two tickers racing over a
tick, one inserts and the other reads the winner's row (Django's `get_or_create`, in a savepoint). `put`
declares a schedule the same way, as every worker process does when it starts."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Count

from flowdeck.store import schedules
from flowdeck.store.django import models
from flowdeck.store.django.tx import Tx

__all__ = ["ScheduleStore"]

R = TypeVar("R")


def _schedule(row: models.Schedule) -> schedules.Schedule:
    return schedules.Schedule(
        spec=schedules.ScheduleSpec.from_json(json.loads(row.definition)),
        paused=row.paused,
        cursor=row.cursor,
        created=row.created,
        updated=row.updated,
        buffered=row.buffered,
    )


def _tick(row: models.ScheduleTick) -> schedules.Tick:
    return schedules.Tick(
        schedule=row.schedule,
        tick=row.tick,
        outcome=schedules.TickOutcome(row.outcome),
        source=schedules.TickSource(row.source),
        execution_id=row.execution_id,
        recorded=row.recorded,
    )


def _rows(tx: Tx) -> Any:
    return models.Schedule.objects.using(tx.connection.alias)


def _ticks(tx: Tx) -> Any:
    return models.ScheduleTick.objects.using(tx.connection.alias)


def put(
    tx: Tx, spec: schedules.ScheduleSpec, now: datetime, *, create_only: bool
) -> schedules.Schedule | None:
    definition = json.dumps(spec.to_json(), sort_keys=True)
    fresh = {"definition": definition, "cursor": now, "created": now, "updated": now}
    # Worker processes starting together declare the same schedules at once: an insert that meets another's
    # uncommitted row waits for it, then reads and locks that row (in a savepoint) instead of failing
    row, made = _rows(tx).select_for_update().get_or_create(name=spec.name, defaults=fresh)
    if made:
        return _schedule(row)
    if create_only:
        return None
    if _schedule(row).spec != spec:
        row.definition, row.updated = definition, now
        row.save(update_fields=["definition", "updated"])
    return _schedule(row)


def get(tx: Tx, name: str) -> schedules.Schedule | None:
    row = _rows(tx).filter(name=name).first()
    return None if row is None else _schedule(row)


def listed(tx: Tx) -> list[schedules.Schedule]:
    return [_schedule(row) for row in _rows(tx).order_by("name")]


def pause_set(tx: Tx, name: str, pause: bool, now: datetime) -> schedules.Schedule | None:
    row = _rows(tx).select_for_update().filter(name=name).first()
    if row is None:
        return None
    row.paused, row.updated = pause, now
    if not pause:
        row.cursor, row.buffered = max(row.cursor, now), None
    row.save()
    return _schedule(row)


def deleted(tx: Tx, name: str) -> bool:
    _ticks(tx).filter(schedule=name).delete()
    count, _ = _rows(tx).filter(name=name).delete()
    return bool(count)


def advanced(tx: Tx, name: str, cursor: datetime, buffered: datetime | None) -> None:
    row = _rows(tx).select_for_update().filter(name=name).first()
    if row is not None:
        row.cursor, row.buffered = max(row.cursor, cursor), buffered
        row.save(update_fields=["cursor", "buffered"])


def recorded(tx: Tx, tick: schedules.Tick) -> schedules.Tick:
    defaults = {
        "outcome": tick.outcome.value,
        "source": tick.source.value,
        "execution_id": tick.execution_id,
        "recorded": tick.recorded,
    }
    row, _ = _ticks(tx).get_or_create(schedule=tick.schedule, tick=tick.tick, defaults=defaults)
    return _tick(row)


def settled(tx: Tx, name: str, tick: datetime, outcome: schedules.TickOutcome) -> None:
    _ticks(tx).filter(schedule=name, tick=tick).update(outcome=outcome.value)


def latest_ticks(
    tx: Tx, name: str, limit: int, outcome: schedules.TickOutcome | None
) -> list[schedules.Tick]:
    found = _ticks(tx).filter(schedule=name)
    if outcome is not None:
        found = found.filter(outcome=outcome.value)
    return [_tick(row) for row in found.order_by("-tick")[:limit]]


def counted(tx: Tx) -> dict[schedules.TickOutcome, int]:
    found = dict(_ticks(tx).values_list("outcome").annotate(n=Count("id")).order_by())
    return {outcome: found.get(outcome.value, 0) for outcome in schedules.TickOutcome}


class ScheduleStore:
    """`ScheduleContract` for `DjangoStore` to inherit (`_run` and `now` are the store's)."""

    async def _run(self, operation: str, work: Callable[[Any], R]) -> R:
        raise NotImplementedError

    def now(self) -> datetime:
        raise NotImplementedError

    async def put_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule:
        work = functools.partial(put, spec=spec, now=self.now(), create_only=False)
        made = await self._run("put_schedule", work)
        assert made is not None
        return made

    async def create_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule | None:
        work = functools.partial(put, spec=spec, now=self.now(), create_only=True)
        return await self._run("create_schedule", work)

    async def get_schedule(self, name: str) -> schedules.Schedule | None:
        return await self._run("get_schedule", functools.partial(get, name=name))

    async def list_schedules(self) -> Sequence[schedules.Schedule]:
        return await self._run("list_schedules", listed)

    async def set_schedule_paused(self, name: str, paused: bool) -> schedules.Schedule | None:
        work = functools.partial(pause_set, name=name, pause=paused, now=self.now())
        return await self._run("set_schedule_paused", work)

    async def delete_schedule(self, name: str) -> bool:
        return await self._run("delete_schedule", functools.partial(deleted, name=name))

    async def advance_schedule(self, name: str, cursor: datetime, buffered: datetime | None) -> None:
        work = functools.partial(advanced, name=name, cursor=cursor, buffered=buffered)
        await self._run("advance_schedule", work)

    async def record_tick(self, tick: schedules.Tick) -> schedules.Tick:
        return await self._run("record_tick", functools.partial(recorded, tick=tick))

    async def settle_tick(self, name: str, tick: datetime, outcome: schedules.TickOutcome) -> None:
        await self._run("settle_tick", functools.partial(settled, name=name, tick=tick, outcome=outcome))

    async def list_ticks(
        self, name: str, limit: int = 20, outcome: schedules.TickOutcome | None = None
    ) -> Sequence[schedules.Tick]:
        work = functools.partial(latest_ticks, name=name, limit=limit, outcome=outcome)
        return await self._run("list_ticks", work)

    async def count_ticks(self) -> Mapping[schedules.TickOutcome, int]:
        return await self._run("count_ticks", counted)
