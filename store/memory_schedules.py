"""The memory store's schedules (`MemorySchedules`, a base of `MemoryStore`): each verb one transition
under the store's lock."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from flowdeck.store import schedules

__all__ = ["MemorySchedules"]


class MemorySchedules:
    """`ScheduleContract` on `self.data` (`schedules`, `ticks`), under `self._lock`."""

    data: Any
    _lock: threading.RLock

    def now(self) -> datetime:
        raise NotImplementedError

    async def put_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule:
        with self._lock:
            found = self.data.schedules.get(spec.name)
            now = self.now()
            if found is None:
                found = schedules.Schedule(spec, paused=False, cursor=now, created=now, updated=now)
            elif found.spec != spec:
                found = dataclasses.replace(found, spec=spec, updated=now)
            self.data.schedules[spec.name] = found
            return found

    async def create_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule | None:
        with self._lock:
            if spec.name in self.data.schedules:
                return None
            return await self.put_schedule(spec)

    async def get_schedule(self, name: str) -> schedules.Schedule | None:
        with self._lock:
            found: schedules.Schedule | None = self.data.schedules.get(name)
            return found

    async def list_schedules(self) -> Sequence[schedules.Schedule]:
        with self._lock:
            return [self.data.schedules[name] for name in sorted(self.data.schedules)]

    async def set_schedule_paused(self, name: str, paused: bool) -> schedules.Schedule | None:
        with self._lock:
            found = self.data.schedules.get(name)
            if found is None:
                return None
            now = self.now()
            changed = dataclasses.replace(found, paused=paused, updated=now)
            if not paused:
                changed = dataclasses.replace(changed, cursor=max(now, found.cursor), buffered=None)
            self.data.schedules[name] = changed
            return changed

    async def delete_schedule(self, name: str) -> bool:
        with self._lock:
            self.data.ticks.pop(name, None)
            return self.data.schedules.pop(name, None) is not None

    async def advance_schedule(self, name: str, cursor: datetime, buffered: datetime | None) -> None:
        with self._lock:
            found = self.data.schedules.get(name)
            if found is not None:
                moved = max(found.cursor, cursor)
                self.data.schedules[name] = dataclasses.replace(found, cursor=moved, buffered=buffered)

    async def record_tick(self, tick: schedules.Tick) -> schedules.Tick:
        with self._lock:
            ticks = self.data.ticks.setdefault(tick.schedule, {})
            recorded: schedules.Tick = ticks.setdefault(tick.tick, tick)
            return recorded

    async def settle_tick(self, name: str, tick: datetime, outcome: schedules.TickOutcome) -> None:
        with self._lock:
            ticks = self.data.ticks.get(name, {})
            if tick in ticks:
                ticks[tick] = dataclasses.replace(ticks[tick], outcome=outcome)

    async def list_ticks(
        self, name: str, limit: int = 20, outcome: schedules.TickOutcome | None = None
    ) -> Sequence[schedules.Tick]:
        with self._lock:
            ticks = self.data.ticks.get(name, {})
            kept = [ticks[at] for at in sorted(ticks, reverse=True) if outcome in (None, ticks[at].outcome)]
            return kept[:limit]

    async def count_ticks(self) -> Mapping[schedules.TickOutcome, int]:
        with self._lock:
            counted = Counter(t.outcome for ticks in self.data.ticks.values() for t in ticks.values())
            return {outcome: counted.get(outcome, 0) for outcome in schedules.TickOutcome}
