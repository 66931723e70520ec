"""`DjangoClaimed`: the Django store's claim handle.

Its hot verbs go through the store's writer seam (`store/django/writes.py`): one statement on PostgreSQL,
one transaction on SQLite. What both databases do in a transaction lives here: a write opened by an UPDATE
that carries the acceptance rule and answers the cancel flag (`_accept`), where a refused write rolls back,
changing nothing; `update_status`; and the endings (`_finish_in`) that SQLite always takes, PostgreSQL for
the refusals its statement cannot tell apart, and a claim handed back by a cancelled poll.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from flowdeck.store import spi
from flowdeck.store.django import atomic, queries, rows
from flowdeck.store.django.tx import Tx
from flowdeck.store.held import HeldClaim

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["DjangoClaimed", "Opened"]

T = TypeVar("T")
R = TypeVar("R")
# A transactional write's answer, and the cancel flag its acceptance read (None: the claim was lost).
Answered = tuple[T, tuple[bool, str] | None]


@dataclass(frozen=True)
class Opened:
    """A write the acceptance rule let through: the cancel flag it answered, the seqs it reserved."""

    cancel: tuple[bool, str]
    first_seq: int
    events: Sequence[spi.Event]


class DjangoClaimed(HeldClaim):
    """A claim handle on the Django store (see the module doc). Its public face is `spi.Claimed`; the
    underscored members serve the store's writer seams."""

    def __init__(
        self,
        store: DjangoStore,
        state: spi.ExecutionState,
        satisfied: frozenset[str],
        token: int,
        ledger: tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None = None,
    ) -> None:
        super().__init__(state, satisfied, token)
        self._store = store
        self._writes = store._writes
        self._ledger = ledger

    async def prefetched_ledger(self) -> tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None:
        return self._ledger

    @property
    def _id(self) -> str:
        return self._state.execution_id

    def _key(self, now: datetime) -> dict[str, Any]:
        """The parameters every write under this claim presents: the row, the token, the store's now."""
        return {"id": self._state.execution_id, "token": self._token, "now": now}

    # ------------------------------------------------------------------------------------ verbs

    async def append_event(
        self, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        return await self._writes.append_event(self, [*preceding, event])

    async def record_wait(
        self, path: str, wake: spi.Wake, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        return await self._writes.record_wait(self, path, wake, [*preceding, event])

    async def renew_claim(self, lease: timedelta) -> bool:
        return await self._writes.renew_claim(self, lease)

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
        events = [*preceding, event]
        return await self._writes.record_progress(self, path, value, events, extra_fields, clear_cancel)

    async def finish(
        self, outcome: spi.ClaimOutcome, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        return await self._writes.finish(self, outcome, preceding)

    async def record_atomically(
        self, path: str, body: Callable[[], R], complete: Callable[[R], spi.Completion]
    ) -> tuple[spi.ProgressOutcome, R]:
        """The body and the record in one transaction on a store thread (store/django/atomic.py)."""
        store = self._store
        outcome, result, cancel = await store._submit(
            "record_atomically", atomic.run, self, path, body, complete
        )
        if cancel is not None:
            self.heard_cancel(*cancel)
        return outcome, result  # type: ignore[return-value]  # None only when the body never ran

    async def update_status(
        self, status: spi.Status, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        def work(tx: Tx, now: datetime) -> Answered[spi.StatusOutcome]:
            if status.terminal:
                return self._refused(tx, now), None
            events = [*preceding, event]
            opened = self._accept(tx, now, events, queries.ACCEPT_STATUS, **rows.status_columns(status))
            if opened is None:
                return spi.StatusOutcome.CLAIM_LOST, None
            tx.insert_events(self._id, opened.first_seq, opened.events)
            return spi.StatusOutcome.APPLIED, opened.cancel

        return await self._write("update_status", work)

    # ------------------------------------------------------------------------------------ transactions

    async def _write(self, operation: str, work: Callable[[Tx, datetime], Answered[T]]) -> T:
        """Run `work` as one transaction at the store's now; hear the cancel flag its acceptance read."""
        now = self._store.clock.now()
        outcome, cancel = await self._store._run(operation, lambda tx: work(tx, now))
        if cancel is not None:
            self.heard_cancel(*cancel)
        return outcome

    def _accept(
        self,
        tx: Tx,
        now: datetime,
        events: Sequence[spi.Event],
        query: queries.Query = queries.ACCEPT_WRITE,
        **extra: Any,
    ) -> Opened | None:
        """Open the write under the acceptance rule, reserving the seqs of `events`; None: claim lost."""
        found = tx.one(query, {**self._key(now), "events": len(events), **extra})
        if found is None:
            return None
        cancel, reason, last_seq = found
        return Opened((bool(cancel), reason or ""), last_seq - len(events) + 1, events)

    def _progress_in(
        self,
        tx: Tx,
        now: datetime,
        path: str,
        value: spi.FieldData | None,
        events: Sequence[spi.Event],
        extra_fields: Mapping[str, spi.FieldData] | None,
        clear_cancel: bool = False,
    ) -> Answered[spi.ProgressOutcome]:
        """`record_progress` in the transaction `tx`; a refusal rolls the whole transaction back."""
        opened = self._accept(tx, now, events)
        if opened is None:
            tx.rollback()
            return spi.ProgressOutcome.CLAIM_LOST, None
        at = {"id": self._id, "path": path}
        if value is not None:
            field = {**at, "name": path, "value": value.value, "tag": value.tag}
            wrote = tx.one(queries.INSERT_FIELD_IF_ABSENT, field)
        else:
            wrote = tx.one(queries.INSERT_MARK_IF_ABSENT, at)
        if wrote is None:
            tx.rollback()
            return spi.ProgressOutcome.ALREADY_RECORDED, opened.cancel  # the claim held: its flag is heard
        for name, extra in (extra_fields or {}).items():
            field = {"id": self._id, "name": name, "value": extra.value, "tag": extra.tag}
            tx.execute(queries.INSERT_FIELD_IF_ABSENT, field)
            tx.cursor.fetchall()
        tx.execute(queries.DELETE_WAIT, at)
        cancel = opened.cancel
        if clear_cancel:
            tx.execute(queries.CLEAR_CANCEL, {"id": self._id})
            cancel = (False, "")
        tx.insert_events(self._id, opened.first_seq, opened.events)
        return spi.ProgressOutcome.RECORDED, cancel

    def _refused(self, tx: Tx, now: datetime) -> spi.StatusOutcome:
        """A write refused for its own sake still says claim-lost first when the claim is gone."""
        if tx.one(queries.CLAIM_HOLDS, self._key(now)) is None:
            return spi.StatusOutcome.CLAIM_LOST
        return spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL

    def _not_completed(self, tx: Tx, now: datetime) -> Answered[spi.StatusOutcome]:
        """Why ACCEPT_COMPLETION wrote nothing: the claim is gone, or a cancel request is outstanding."""
        found = tx.one(queries.CLAIM_STATE, self._key(now))
        if found is None:
            return spi.StatusOutcome.CLAIM_LOST, None
        return spi.StatusOutcome.CANCEL_REQUESTED, (bool(found[0]), found[1] or "")

    async def _finish_in_transaction(
        self, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event]
    ) -> spi.StatusOutcome:
        return await self._write("finish", lambda tx, now: self._finish_in(tx, outcome, preceding, now))

    def _finish_in(
        self, tx: Tx, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event], now: datetime
    ) -> Answered[spi.StatusOutcome]:
        """`finish` in the transaction `tx`. A limited execution's ending gives its slots back and wakes the
        pollers at its commit, here and in the other processes (nothing else would, store.concurrency)."""
        match outcome:
            case spi.Terminal(status, event):
                if not status.terminal:
                    return self._refused(tx, now), None
                completing = isinstance(status, spi.Completed)
                query = queries.ACCEPT_COMPLETION if completing else queries.ACCEPT_RELEASE_STATUS
                opened = self._accept(tx, now, [*preceding, event], query, **rows.status_columns(status))
                if opened is None:
                    return (
                        self._not_completed(tx, now) if completing else (spi.StatusOutcome.CLAIM_LOST, None)
                    )
                tx.execute(queries.DELETE_WAITS, {"id": self._id})
            case spi.Suspended(waiting_on):
                opened = self._accept(tx, now, preceding, queries.ACCEPT_RELEASE)
                if opened is None:
                    return spi.StatusOutcome.CLAIM_LOST, None
                self._retire_waits_except(tx, waiting_on)
            case spi.Stop(status, event):
                if not isinstance(status, spi.Stopped):
                    return self._refused(tx, now), None
                query = queries.ACCEPT_RELEASE_STATUS
                opened = self._accept(tx, now, [*preceding, event], query, **rows.status_columns(status))
                if opened is None:
                    return spi.StatusOutcome.CLAIM_LOST, None
                tx.execute(queries.DELETE_WAITS, {"id": self._id})
            case _:
                raise TypeError(f"not a claim outcome: {outcome!r}")
        if isinstance(outcome, spi.Suspended) or self.state.concurrency is not None:
            self._store._wake_after_commit(tx)
        tx.insert_events(self._id, opened.first_seq, opened.events)
        return spi.StatusOutcome.APPLIED, opened.cancel

    def _retire_waits_except(self, tx: Tx, waiting_on: frozenset[str]) -> None:
        key = {"id": self._id}
        if waiting_on:
            params: dict[str, Any] = dict(key)
            keep = queries.in_list("keep", sorted(waiting_on), params)
            tx.execute(queries.DELETE_WAITS_EXCEPT, params, keep=keep)
        else:
            tx.execute(queries.DELETE_WAITS, key)
