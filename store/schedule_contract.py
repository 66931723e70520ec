"""The store contract's schedules (`ScheduleContract`, which `spi.FlowStore` inherits): definitions and
their run-time state, and one record per tick.

The guarantee "one execution per tick" is not kept here: it is the deterministic execution id
(`schedules.tick_execution_id`) started through the store's idempotent `create_execution_if_absent`. What
is kept here is one *outcome* per tick (`record_tick`: the first recorded wins), so two tickers racing
over one tick agree on whether it started, was skipped or waits.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime

from flowdeck.store import schedules

__all__ = ["ScheduleContract"]


class ScheduleContract(abc.ABC):
    """What a store keeps of schedules (part of `spi.FlowStore`)."""

    @abc.abstractmethod
    async def put_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule:
        """Create or redefine `spec.name`: a new one is active with its cursor at the store's now; an
        existing one takes the new definition and keeps its paused state, cursor, buffered tick and
        created; `updated` moves only when the definition changed (a flows module's declarations are
        upserted at every registration, by every process)."""

    @abc.abstractmethod
    async def create_schedule(self, spec: schedules.ScheduleSpec) -> schedules.Schedule | None:
        """Create `spec.name` as `put_schedule` does; None (nothing touched) when the name exists."""

    @abc.abstractmethod
    async def get_schedule(self, name: str) -> schedules.Schedule | None:
        """The schedule named, None when there is none."""

    @abc.abstractmethod
    async def list_schedules(self) -> Sequence[schedules.Schedule]:
        """Every schedule, by name."""

    @abc.abstractmethod
    async def set_schedule_paused(self, name: str, paused: bool) -> schedules.Schedule | None:
        """Pause or resume; None when there is no such schedule. A resume moves the cursor to the store's
        now and drops a buffered tick: what fell due while paused is not caught up (backfill does that)."""

    @abc.abstractmethod
    async def delete_schedule(self, name: str) -> bool:
        """Forget the schedule and its tick records (its executions stay); False when there was none."""

    @abc.abstractmethod
    async def advance_schedule(self, name: str, cursor: datetime, buffered: datetime | None) -> None:
        """After a ticker's round: the cursor moves to `cursor` unless it is already later (it never goes
        back), and the buffered tick becomes `buffered`. Nothing happens to a schedule that is gone."""

    @abc.abstractmethod
    async def record_tick(self, tick: schedules.Tick) -> schedules.Tick:
        """Record what became of `tick` unless that (schedule, tick) is recorded already; answers the one
        recorded (this one, or the earlier one that won): callers racing over a tick all see one outcome."""

    @abc.abstractmethod
    async def settle_tick(self, name: str, tick: datetime, outcome: schedules.TickOutcome) -> None:
        """Change a recorded tick's outcome (a buffered tick that started)."""

    @abc.abstractmethod
    async def list_ticks(
        self, name: str, limit: int = 20, outcome: schedules.TickOutcome | None = None
    ) -> Sequence[schedules.Tick]:
        """The schedule's latest recorded ticks (of that outcome, when given), newest first, at most
        `limit`."""

    @abc.abstractmethod
    async def count_ticks(self) -> Mapping[schedules.TickOutcome, int]:
        """How many ticks of every schedule are recorded with each outcome (the metrics)."""
