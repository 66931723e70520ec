"""`GET /health`: does this web process reach its store, and what does it serve."""

from __future__ import annotations

import dataclasses

from django.http import HttpRequest
from ninja import Router

from flowdeck.console import discovery, health_schemas, heartbeat, runtime, schemas
from flowdeck.console.api.responses import errors
from flowdeck.store import spi

__all__ = ["router"]

router = Router(tags=["system"])


# A 503 is this body when the caller was recognised and the store then failed; the error body when the
# database could not even say who the caller is (`flowdeck.console.api.errors.UNREACHABLE`).
_UNHEALTHY = health_schemas.HealthDto | schemas.ErrorResponse


@router.get("/health", response={**errors(), 200: health_schemas.HealthDto, 503: _UNHEALTHY}, by_alias=True)
async def check_health(request: HttpRequest) -> tuple[int, health_schemas.HealthDto]:
    """200 when the store answers, 503 (same body) when it does not. Workers run in `flowdeck_workers`
    processes; `executors` is what they last reported (their heartbeats, the last minute's). While the
    database refuses connections the caller cannot be checked: 503 with the error body."""
    engine = await runtime.engine()
    executors: list[health_schemas.ExecutorHealthDto] = []
    try:
        await engine.store.list_workflows()
        executors = await _executors(engine.store)
    except spi.FlowStoreError as error:
        failure: str | None = str(error)
    else:
        failure = None
    body = health_schemas.HealthDto(
        healthy=failure is None,
        store_ok=failure is None,
        store_error=failure,
        workflows=sorted(discovery.registered_flows()),
        executor_id=engine.executor_id,
        executors=executors,
    )
    return (200 if failure is None else 503), body


async def _executors(store: object) -> list[health_schemas.ExecutorHealthDto]:
    """The worker processes' heartbeats; `state` says what `stale` does, and more."""
    found = await heartbeat.executors(store)
    return [health_schemas.ExecutorHealthDto(**_fields(e), state=e.state) for e in found]


def _fields(executor: heartbeat.ExecutorView) -> dict[str, object]:
    return {f.name: getattr(executor, f.name) for f in dataclasses.fields(executor) if f.name != "stale"}
