"""The rate limits' section (`/limits/rates`): each declared limit with its configured and observed rate,
the executions it holds back now (a link to the list filtered `rate-limited:<limit>`), its tokens taken at
once and reserved, and a per-key limit's busiest keys (`console.rate_limits`). Read-only: a limit is
declared in code or settings. The page is one section template (`partials/rate_limits.html`) so the Limits
page can hold it beside the concurrency limits."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import rate_limits
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required

__all__ = ["rate_limits_page"]


@login_required
@require_GET
async def rate_limits_page(request: HttpRequest) -> HttpResponse:
    context = {"nav": "limits", "rate_limits": await rate_limits.shown_all()}
    return await common.page(request, "flowdeck/console/rate_limits.html", context)
