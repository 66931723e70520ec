"""`GET /api/v1/limits`: each concurrency limit now (`store.concurrency`), with its running and queued.

One item per workflow limit, then the busiest keys (the most queued first), as `flowdeck limits --json`
prints them and the Limits page shows them. The queued executions themselves are a filter of the list:
`GET /api/v1/executions?status=queued`. Read-only; any caller.
"""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from flowdeck.console import limits, runtime, schemas
from flowdeck.console.api.responses import errors

__all__ = ["LimitDto", "LimitsPage", "LimitsQuery", "router"]

router = Router(tags=["limits"])

MAX_BUSIEST = 1000


class LimitsQuery(Schema):
    workflow: schemas.Text = Field("", description="only this workflow's limits; blank for every workflow")
    busiest: schemas.Integer = Field(
        10, ge=0, le=MAX_BUSIEST, description="keys listed, the most queued first"
    )


class LimitDto(schemas.Wire):
    """A workflow's limit (`key` null) or one key's: its capacity, the slots held now (`running`), the
    queued, and the oldest queued execution's creation and wait (null when none is queued)."""

    workflow_id: str
    key: str | None
    capacity: int
    running: int
    queued: int
    oldest_queued: datetime | None
    oldest_queued_wait_seconds: float | None


class LimitsPage(schemas.Wire):
    items: list[LimitDto]


@router.get("/limits", response={200: LimitsPage, **errors()}, by_alias=True)
async def list_limits(request: HttpRequest, params: Query[LimitsQuery]) -> LimitsPage:
    """Each concurrency limit with work now: running and queued, per workflow, then the busiest keys."""
    store = (await runtime.engine()).store
    found = await store.limit_counts(params.workflow or None, params.busiest)
    now = store.now()
    return LimitsPage(items=[LimitDto.model_validate(limits.count_json(c, now)) for c in found])
