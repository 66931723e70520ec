"""The health endpoint's wire forms (`GET /api/v1/health`): this web process's view of the store and of
the worker processes it has heard from."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from flowdeck.console.schemas import Wire

__all__ = ["ExecutorHealthDto", "HealthDto"]


class ExecutorHealthDto(Wire):
    """One worker process's latest heartbeat: its engine's health as it last recorded it. `state` is
    `healthy` (every configured worker alive), `unhealthy`, `stopped` (its last beat, on the way out) or
    `stale` (silent for more than three heartbeats)."""

    executor_id: str
    host: str
    pid: int
    state: Literal["healthy", "unhealthy", "stopped", "stale"]
    started: datetime
    updated: datetime
    age_seconds: float
    workers_alive: int
    workers_configured: int
    poll_failures: int
    last_poll_failure: str | None
    last_poll_failure_at: datetime | None
    store_failures: int
    claims_held: list[str]


class HealthDto(Wire):
    """This web process's view: the store answers (`storeOk`), and what it serves. Workers run elsewhere:
    `executors` lists the worker processes heard from in the last minute (their heartbeats)."""

    healthy: bool
    store_ok: bool
    store_error: str | None
    workflows: list[str]
    executor_id: str
    executors: list[ExecutorHealthDto] = Field(default_factory=list)
