"""One execution's row as every reader sees it, and a page of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from store.status import Status
from store.wakes import Wake


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
            )
        )


@dataclass(frozen=True)
class ExecutionPage:
    """A page of `list_executions`: newest created first; `total` counts every match, not the page."""

    items: Sequence[ExecutionState]
    total: int
