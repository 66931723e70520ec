"""`GET /health`: does this web process reach its store, and what does it serve."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from console import discovery, runtime, schemas
from console.api.responses import errors
from store import spi

__all__ = ["router"]

router = Router(tags=["system"])


@router.get("/health", response={**errors(), 200: schemas.HealthDto, 503: schemas.HealthDto}, by_alias=True)
async def health(request: HttpRequest) -> tuple[int, schemas.HealthDto]:
    """200 when the store answers, 503 (same body) when it does not. Workers run in `runworkers`
    processes; their health is theirs to report."""
    engine = await runtime.engine()
    try:
        await engine.store.list_workflows()
    except spi.FlowStoreError as error:
        failure: str | None = str(error)
    else:
        failure = None
    body = schemas.HealthDto(
        healthy=failure is None,
        store_ok=failure is None,
        store_error=failure,
        workflows=sorted(discovery.registered_flows()),
        executor_id=engine.executor_id,
    )
    return (200 if failure is None else 503), body
