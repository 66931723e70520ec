"""The operator writes (resume, answer, end) as work in one transaction `tx`, shared by the store's own
transactions (`DjangoStore.resume` …) and the caller's (`joined.CallerTransaction.resume` …).

Each locks the execution's row, refuses by `rules.operator_refusal` (writing nothing), or writes its event
and changes and wakes the pollers at the commit, whichever transaction that is. Called through this module
(`operator_writes.resume_in`), so both paths run the one function.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from flowdeck.store import rules, spi
from flowdeck.store.django import queries
from flowdeck.store.django.tx import Tx

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["answer_in", "end_in", "resume_in"]


def resume_in(
    store: DjangoStore, tx: Tx, execution_id: str, hash: str, event: spi.Event, now: datetime
) -> spi.OperatorOutcome:
    """Re-pin the execution to version `hash` and lift its stop (`rules.resumed`), with `event`."""
    row = store._lock_row(tx, execution_id)
    refused = rules.operator_refusal(row, now)
    if refused is not None or row is None:
        return refused or spi.OperatorOutcome.NOT_FOUND
    row.write(tx, now, [event], status=rules.resumed(row.status), hash=hash)
    store._wake_after_commit(tx)
    return spi.OperatorOutcome.APPLIED


def answer_in(
    store: DjangoStore,
    tx: Tx,
    execution_id: str,
    path: str,
    value: spi.FieldData | None,
    event: spi.Event,
    now: datetime,
) -> spi.OperatorOutcome:
    """Record what the node at `path` of a stopped execution did (its value, if any, and its mark)."""
    row = store._lock_row(tx, execution_id)
    refused = rules.operator_refusal(row, stopped=True)
    if refused is not None or row is None:
        return refused or spi.OperatorOutcome.NOT_FOUND
    at = {"id": execution_id, "path": path}
    if tx.one(queries.RECORDED_AT, at)[0]:
        return spi.OperatorOutcome.ALREADY_RECORDED
    if value is not None:
        tx.execute(
            queries.INSERT_FIELD_IF_ABSENT, {**at, "name": path, "value": value.value, "tag": value.tag}
        )
    tx.execute(queries.INSERT_MARK_IF_ABSENT, at)
    tx.execute(queries.DELETE_WAIT, at)
    row.write(tx, now, [event], status=rules.answered(row.status, path))
    store._wake_after_commit(tx)
    return spi.OperatorOutcome.APPLIED


def end_in(
    store: DjangoStore, tx: Tx, execution_id: str, status: spi.Failed, event: spi.Event, now: datetime
) -> spi.OperatorOutcome:
    """End the execution with `status`, dropping its waits and any claim."""
    row = store._lock_row(tx, execution_id)
    refused = rules.operator_refusal(row, now)
    if refused is not None or row is None:
        return refused or spi.OperatorOutcome.NOT_FOUND
    tx.execute(queries.DELETE_WAITS, {"id": execution_id})
    row.write(tx, now, [event], status=status, executor=None, claim_expiry=None, claim_token=None)
    store._wake_after_commit(tx)
    return spi.OperatorOutcome.APPLIED
