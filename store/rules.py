"""The decisions every store makes the same way in Python, whatever holds its rows: who may touch a row
(the operator refusals), where a lifted stop goes (a resume, a cancel request on a Stopped row), what a
cancel request answers and writes.

Each takes the row as the store read it (an `spi.ExecutionState`, or the Django store's locked row: any
value with the columns of `Row`) and changes nothing: the store applies the answer in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from flowdeck.store import spi

__all__ = [
    "CancelWrite",
    "Row",
    "answered",
    "cancel_refusal",
    "cancel_write",
    "claim_live",
    "lifted",
    "operator_refusal",
    "resumed",
]


class Row(Protocol):
    """The columns the rules read."""

    @property
    def flow_id(self) -> str: ...
    @property
    def status(self) -> spi.Status: ...
    @property
    def claim_expiry(self) -> datetime | None: ...
    @property
    def claim_token(self) -> int | None: ...
    @property
    def cancel_requested(self) -> bool: ...
    @property
    def cancel_reason(self) -> str: ...


def claim_live(row: Row, now: datetime) -> bool:
    """A claim holds the row at `now`: a token, and an expiry still ahead."""
    return row.claim_token is not None and row.claim_expiry is not None and now < row.claim_expiry


def lifted(status: spi.Status) -> spi.Status:
    """Where a stop goes when lifted: back to running, or back into the unwind it stopped inside."""
    if isinstance(status, spi.Stopped) and status.cause is not None:
        return spi.Compensating(status.cause)
    return spi.Running()


def resumed(status: spi.Status) -> spi.Status:
    """The status a resume writes: a Stopped one lifted, any other kept."""
    return lifted(status) if isinstance(status, spi.Stopped) else status


def answered(status: spi.Status, path: str) -> spi.Status:
    """The status an answer for the node at `path` writes: a stop at that node marked answered (it waits
    for a resume only), any other status kept."""
    if isinstance(status, spi.Stopped) and status.node == path:
        return replace(status, answered=True)
    return status


def operator_refusal(
    row: Row | None, now: datetime | None = None, *, stopped: bool = False
) -> spi.OperatorOutcome | None:
    """Why an operator write may not touch the row, None when it may. Given `now` (resume, end), a claim
    holding the row refuses too; with `stopped` (answer), a row that is not Stopped does."""
    if row is None:
        return spi.OperatorOutcome.NOT_FOUND
    if row.status.terminal:
        return spi.OperatorOutcome.ALREADY_TERMINAL
    if now is not None and claim_live(row, now):
        return spi.OperatorOutcome.CLAIM_HELD
    if stopped and not isinstance(row.status, spi.Stopped):
        return spi.OperatorOutcome.NOT_STOPPED
    return None


def cancel_refusal(row: Row | None) -> spi.CancelOutcome | None:
    """What `request_cancel` answers without writing (missing or ended, or asked already and not
    Stopped); None when it writes (`cancel_write`)."""
    if row is None:
        return spi.AlreadyTerminal(spi.Cancelled())
    if row.status.terminal:
        return spi.AlreadyTerminal(row.status)
    if row.cancel_requested and not isinstance(row.status, spi.Stopped):
        return spi.AlreadyRequested()
    return None


@dataclass(frozen=True)
class CancelWrite:
    """A cancel request the row takes: the answer, the row's new status and reason, the event to append."""

    answer: spi.CancelOutcome
    status: spi.Status
    reason: str
    event: spi.Event


def cancel_write(row: Row, execution_id: str, reason: str, actor: str | None, now: datetime) -> CancelWrite:
    """What a cancel request `cancel_refusal` let through writes. On a Stopped row it lifts the stop (so
    the unwind can run) even when a request was accepted before; the first reason is kept."""
    event = spi.Event(
        spi.EventKind.CANCEL_REQUESTED, row.flow_id, execution_id, now, {"reason": reason, "actor": actor}
    )
    return CancelWrite(
        spi.AlreadyRequested() if row.cancel_requested else spi.Accepted(),
        lifted(row.status) if isinstance(row.status, spi.Stopped) else row.status,
        row.cancel_reason if row.cancel_requested else reason,
        event,
    )
