"""What an operations page counts: executions per status and per version, claims per executor, and the
executors that claimed lately. Each is answered by the store in one read (`FlowStore.count_by_status` and
its neighbours), so a page never walks the executions itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["ExecutorClaims", "RecentClaimer", "StatusCount", "VersionCount"]


@dataclass(frozen=True)
class StatusCount:
    """How many executions of a workflow have a status, by the status's wire word (`running`, `stopped`,
    `completed`, ...: `spi.status_to_json(status)["type"]`)."""

    workflow_id: str
    status: str
    executions: int


@dataclass(frozen=True)
class VersionCount:
    """One version of a workflow: when it was first registered (None for a hash only executions name)
    and how many of its executions have not ended, of how many."""

    hash: str
    registered: datetime | None
    unended: int
    total: int


@dataclass(frozen=True)
class ExecutorClaims:
    """The executions an executor holds a live claim on (expiring after the store's now), by id."""

    executor_id: str
    execution_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecentClaimer:
    """An executor that claimed executions lately: how many claims, and when the latest was made."""

    executor_id: str
    claims: int
    last: datetime
