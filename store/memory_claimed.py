"""The memory store's claim handle: every write re-reads the row under the store's lock and applies the
token+expiry rule at write time."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from flowdeck.store import rate_limits, spi
from flowdeck.store.held import HeldClaim

if TYPE_CHECKING:
    from flowdeck.store.memory import MemoryStore

__all__ = ["MemoryClaimed", "released"]


class MemoryClaimed(HeldClaim):
    """A claim handle: every write re-reads the row and applies the token+expiry rule at write time."""

    def __init__(
        self,
        store: MemoryStore,
        state: spi.ExecutionState,
        satisfied: frozenset[str],
        token: int,
        ledger: tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None = None,
    ) -> None:
        super().__init__(state, satisfied, token)
        self._store = store
        self._ledger = ledger

    async def prefetched_ledger(self) -> tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None:
        """Only a created-claimed or delivery-claimed row's handle has one (the store held the whole record
        just then)."""
        return self._ledger

    def _held(self) -> tuple[spi.ExecutionState, datetime] | None:
        """The row and the store's now, if this handle's claim still holds it (call under the lock)."""
        now = self._store.clock.now()
        row = self._store.data.executions.get(self._state.execution_id)
        if row is None or row.claim_token != self._token:
            return None
        if row.claim_expiry is None or now >= row.claim_expiry:
            return None
        return row, now

    def _commit(self, row: spi.ExecutionState, events: Sequence[spi.Event]) -> None:
        store = self._store
        store.data.executions[row.execution_id] = row
        store._append(row.execution_id, events)
        self.heard_cancel(row.cancel_requested, row.cancel_reason)
        store._changed()

    async def append_event(
        self, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        with self._store._lock:
            held = self._held()
            if held is None:
                return spi.WriteOutcome.CLAIM_LOST
            row, now = held
            self._commit(dataclasses.replace(row, updated=now), [*preceding, event])
            return spi.WriteOutcome.APPLIED

    async def record_wait(
        self, path: str, wake: spi.Wake, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        with self._store._lock:
            held = self._held()
            if held is None:
                return spi.WriteOutcome.CLAIM_LOST
            row, now = held
            waits = dict(row.waits)
            if rate_limits.rate_row_matches(path):  # a new reservation supersedes the one a start spent
                waits[path] = wake
            else:
                waits.setdefault(path, wake)  # put-if-absent: a replayed sleep keeps its first deadline
            self._commit(dataclasses.replace(row, waits=waits, updated=now), [*preceding, event])
            return spi.WriteOutcome.APPLIED

    async def renew_claim(self, lease: timedelta) -> bool:
        with self._store._lock:
            held = self._held()
            if held is None:
                return False
            row, now = held
            self._commit(dataclasses.replace(row, claim_expiry=now + lease, updated=now), [])
            return True

    async def update_status(
        self, status: spi.Status, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        with self._store._lock:
            held = self._held()
            if held is None:
                return spi.StatusOutcome.CLAIM_LOST
            row, now = held
            if status.terminal or row.status.terminal:
                return spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL
            self._commit(dataclasses.replace(row, status=status, updated=now), [*preceding, event])
            return spi.StatusOutcome.APPLIED

    async def record_progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        preceding: Sequence[spi.Event] = (),
        extra_fields: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        store = self._store
        with store._lock:
            held = self._held()
            if held is None:
                return spi.ProgressOutcome.CLAIM_LOST
            row, now = held
            eid = row.execution_id
            fields, marks = store.data.fields[eid], store.data.progress[eid]
            if (path in fields) if value is not None else (path in marks):
                self.heard_cancel(row.cancel_requested, row.cancel_reason)  # the claim held: as PostgreSQL
                return spi.ProgressOutcome.ALREADY_RECORDED
            if value is not None:
                fields[path] = value
            else:
                marks.add(path)
            for name, extra in (extra_fields or {}).items():
                fields.setdefault(name, extra)
            waits = {p: w for p, w in row.waits.items() if p != path}
            changed = dataclasses.replace(row, waits=waits, updated=now)
            if clear_cancel:
                changed = dataclasses.replace(changed, cancel_requested=False, cancel_reason="")
            self._commit(changed, [*preceding, event])
            return spi.ProgressOutcome.RECORDED

    async def finish(
        self, outcome: spi.ClaimOutcome, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        with self._store._lock:
            held = self._held()
            if held is None:
                return spi.StatusOutcome.CLAIM_LOST
            row, now = held
            match outcome:
                case spi.Terminal(status, event):
                    if not status.terminal or row.status.terminal:
                        return spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL
                    if isinstance(status, spi.Completed) and row.cancel_requested:
                        # judged under the same lock as the write: a request accepted before this
                        # point is never followed by Completed (I2)
                        self.heard_cancel(True, row.cancel_reason)
                        return spi.StatusOutcome.CANCEL_REQUESTED
                    self._commit(released(row, status=status, waits={}, updated=now), [*preceding, event])
                case spi.Suspended(waiting_on):
                    waits = {p: w for p, w in row.waits.items() if p in waiting_on}
                    self._commit(released(row, waits=waits, updated=now), preceding)
                case spi.Stop(status, event):
                    if not isinstance(status, spi.Stopped) or row.status.terminal:
                        return spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL
                    self._commit(released(row, status=status, waits={}, updated=now), [*preceding, event])
                case _:
                    raise TypeError(f"not a claim outcome: {outcome!r}")
            return spi.StatusOutcome.APPLIED


def released(row: spi.ExecutionState, **changes: object) -> spi.ExecutionState:
    """The row with its claim made absent (executor, expiry and token), plus `changes`."""
    return dataclasses.replace(row, executor=None, claim_expiry=None, claim_token=None, **changes)  # type: ignore[arg-type]
