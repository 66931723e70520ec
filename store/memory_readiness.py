"""When a memory store's row is ready to be claimed, and when the next one will be with no write.

The memory store's reading of I8 (the SQL stores say the same in `store/django/queries.py`: the claim's
WHERE clause and `NEXT_WAKE`). Pure functions of the rows, the delivered fields and the time; the store
calls them under its lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from flowdeck.store import rules, spi

__all__ = ["claimable", "next_wake", "ready", "ready_by_delivery", "satisfied"]

Served = frozenset[tuple[str, str]]
Fields = Mapping[str, Mapping[str, spi.FieldData]]


def claimable(row: spi.ExecutionState) -> bool:
    """A status a worker can run: running, or compensating its undo."""
    return isinstance(row.status, spi.Running | spi.Compensating)


def satisfied(row: spi.ExecutionState, now: datetime, fields: Fields) -> frozenset[str]:
    """The row's wait paths that are over at `now`: a sleep come due, or its field delivered."""
    delivered = fields.get(row.execution_id, {})
    return frozenset(
        path
        for path, wake in row.waits.items()
        if (now >= wake.at if isinstance(wake, spi.WakeAt) else wake.name in delivered)
    )


def ready(row: spi.ExecutionState, served: Served, now: datetime, fields: Fields) -> bool:
    """I8, with Flowdeck's rule that a Stopped execution is never ready."""
    if (row.flow_id, row.hash) not in served:
        return False
    if row.status.terminal or isinstance(row.status, spi.Stopped):
        return False
    expired = row.claim_expiry is not None and now >= row.claim_expiry
    if row.claim_token is not None and not expired:
        return False
    died_mid_flight = row.claim_token is not None and expired
    return row.cancel_requested or not row.waits or died_mid_flight or bool(satisfied(row, now, fields))


def ready_by_delivery(row: spi.ExecutionState, name: str, now: datetime) -> bool:
    """Whether a delivery of `name` just made the row ready for its deliverer: a claimable status, no live
    claim, and a wait row on that field (`ready`'s rule, narrowed to what this write changed)."""
    if row.status.terminal or isinstance(row.status, spi.Stopped):
        return False
    if rules.claim_live(row, now):
        return False
    return any(isinstance(w, spi.WakeOnField) and w.name == name for w in row.waits.values())


def next_wake(rows: Iterable[spi.ExecutionState], served: Served, now: datetime) -> datetime | None:
    """When a claim found nothing: the earliest instant after `now` at which a served row comes ready with
    no write (a sleep or a rate limit's wait coming due, a lease lapsing), so a blocked poll wakes then
    instead of at its timeout (`NEXT_WAKE` in the SQL stores)."""
    soonest: datetime | None = None
    for row in rows:
        if (row.flow_id, row.hash) not in served or not claimable(row):
            continue
        due = [w.at for w in row.waits.values() if isinstance(w, spi.WakeAt) and w.at > now]
        if row.claim_expiry is not None and row.claim_expiry > now:
            due.append(row.claim_expiry)
        for at in due:
            soonest = at if soonest is None or at < soonest else soonest
    return soonest
