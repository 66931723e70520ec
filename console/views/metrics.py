"""`GET /metrics`: the Prometheus exposition (`console.metrics`), for a session or a bearer token as the
API is (anyone else: the API's 401)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from console import heartbeat, metrics, runtime
from console.auth import callers_only_async

__all__ = ["metrics_page"]


@require_GET
@callers_only_async
async def metrics_page(request: HttpRequest) -> HttpResponse:
    store = (await runtime.engine()).store
    fresh = heartbeat.heartbeat_interval() * heartbeat.STALE_AFTER_BEATS
    body = await metrics.scrape(store, fresh)
    response = HttpResponse(body, content_type=metrics.CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
