"""One execution's row as every reader sees it, and a page of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from flowdeck.store.concurrency import Limits
from flowdeck.store.status import Status
from flowdeck.store.wakes import Wake


@dataclass(frozen=True, eq=True)
class ExecutionState:
    """One execution's row: lifecycle, claim, version, wait rows and cancel flag, with no ledger read.

    Equality is structural; the waits mapping compares and hashes independently of insertion order.
    """

    execution_id: str
    flow_id: str
    status: Status
    executor: str | None
    claim_expiry: datetime | None
    hash: str
    created: datetime
    updated: datetime
    waits: Mapping[str, Wake]
    cancel_requested: bool
    claim_token: int | None
    cancel_reason: str = ""
    priority: int = 0  # `claim_order`: higher claimed first
    concurrency: Limits | None = None  # the limits it runs under (`store.concurrency`)

    def __hash__(self) -> int:
        waits_hash = sum(hash(item) for item in self.waits.items())
        return hash(
            (
                self.execution_id,
                self.flow_id,
                self.status,
                self.executor,
                self.claim_expiry,
                self.hash,
                self.created,
                self.updated,
                waits_hash,
                self.cancel_requested,
                self.claim_token,
                self.cancel_reason,
                self.priority,
                self.concurrency,
            )
        )


# The orders `list_executions` takes, newest first: by creation, or by the latest change to the row.
ORDER_BY = ("created", "updated")


def check_order(order_by: str) -> str:
    """`order_by` when it is one of `ORDER_BY`, else ValueError naming them."""
    if order_by not in ORDER_BY:
        raise ValueError(f"order_by must be one of {', '.join(ORDER_BY)} (got {order_by!r})")
    return order_by


@dataclass(frozen=True)
class ExecutionPage:
    """A page of `list_executions`: newest first by its order; `total` counts every match, not the page."""

    items: Sequence[ExecutionState]
    total: int
