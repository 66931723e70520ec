"""Routes about rate limits: the declared limits with their configured and observed rates and the
executions each holds back now (`console.rate_limits`). Reading needs a caller; there is nothing to change
at run time (a limit is declared in a flows module or in `FLOWDECK_RATE_LIMITS`)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from flowdeck.console import rate_limit_schemas, rate_limits
from flowdeck.console.api.responses import errors

__all__ = ["router"]

router = Router(tags=["rate limits"])
Dto = rate_limit_schemas.RateLimitDto


@router.get("/rate-limits", response={200: list[Dto], **errors()}, by_alias=True)
async def list_rate_limits(request: HttpRequest) -> list[Dto]:
    """Every rate limit by name: configured rate, observed rate, rate-limited now, busiest keys."""
    return [rate_limit_schemas.rate_limit_of(s) for s in await rate_limits.shown_all()]
