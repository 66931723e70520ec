"""`GET /metrics`: the Prometheus exposition (`console.metrics`), for a session or a bearer token as the
API is (anyone else: the API's 401). `HEAD` answers as `GET` does; any other method is a plain 405 naming
the two, before the caller is looked at (it is a read: no form posts here, so no CSRF page either)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from flowdeck.console import heartbeat, metrics, runtime, states
from flowdeck.console.auth import callers_only_async

__all__ = ["metrics_page"]

ALLOWED = ("GET", "HEAD")


@csrf_exempt
async def metrics_page(request: HttpRequest) -> HttpResponse:
    if request.method not in ALLOWED:
        return _not_allowed(request)
    return await _exposition(request)


@callers_only_async
async def _exposition(request: HttpRequest) -> HttpResponse:
    engine = await runtime.engine()
    fresh = heartbeat.heartbeat_interval() * heartbeat.STALE_AFTER_BEATS
    body = await metrics.scrape(engine.store, fresh, await states.served_by(engine), engine.rate_limits)
    response = HttpResponse(body, content_type=metrics.CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response


def _not_allowed(request: HttpRequest) -> HttpResponse:
    # Plain text, as the exposition is: a scraper or a curl reads it as it is.
    response = HttpResponse(
        f"{request.path} does not take {request.method}; it takes {', '.join(ALLOWED)}\n",
        status=405,
        content_type="text/plain; charset=utf-8",
    )
    response["Allow"] = ", ".join(ALLOWED)
    return response
