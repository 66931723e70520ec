"""Executor heartbeats: what each worker process last reported of its engine's health.

The web process runs no workers, so it cannot ask an engine for `health()`: every process that runs
workers records a heartbeat in the store (`FlowStore.record_heartbeat`) and the console lists the fresh
ones (`FlowStore.list_heartbeats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Heartbeat", "RecordedHeartbeat"]


@dataclass(frozen=True, kw_only=True)
class Heartbeat:
    """A worker process's report: its engine's `Health` fields and where it runs. `started` None means
    "the store's now at this executor's first heartbeat"."""

    executor_id: str
    host: str = ""
    pid: int = 0
    started: datetime | None = None
    workers_alive: int = 0
    workers_configured: int = 0
    poll_failures: int = 0
    last_poll_failure: str | None = None
    last_poll_failure_at: datetime | None = None
    store_failures: int = 0
    claims_held: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RecordedHeartbeat(Heartbeat):
    """An executor's latest heartbeat as stored: `started` kept from its first one, `updated` the store's
    clock at the latest, `claims_held` sorted."""

    started: datetime
    updated: datetime
