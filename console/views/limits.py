"""The Limits page (`/limits/`): each concurrency limit now (`store.concurrency`): per workflow its declared
limits, the slots held, the queued (linking to the list filtered to them) and the oldest queued's wait; then
the busiest keys; then each rate limit (`console.rate_limits`: configured and observed rate, the executions
it holds back now, tokens taken and reserved, a per-key limit's busiest keys, in the section template
`partials/rate_limits.html`). Read-only, as limits are declared in code or settings: any signed-in person."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import limits, rate_limits, runtime
from flowdeck.console.views import common
from flowdeck.console.views.overview import list_url
from flowdeck.console.views.signin import login_required
from flowdeck.store import concurrency

__all__ = ["BUSIEST", "limits_page"]

BUSIEST = 20  # keys listed, the most queued first


@login_required
@require_GET
async def limits_page(request: HttpRequest) -> HttpResponse:
    engine = await runtime.engine()
    store = engine.store
    declared = {w.id: w.meta.concurrency for w in await engine.workflows.list() if w.meta.concurrency}
    found = await store.limit_counts(None, BUSIEST)
    now = store.now()
    counted = {c.group.flow_id: c for c in found if c.group.key is None}
    flows = sorted(set(declared) | set(counted))
    context = {
        "nav": "limits",
        "workflows": [_row(w, declared.get(w, ""), counted.get(w), now) for w in flows],
        "keys": [_key_row(c, now) for c in found if c.group.key is not None],
        "busiest": BUSIEST,
        "rate_limits": await rate_limits.shown_all(),
    }
    return await common.page(request, "flowdeck/console/limits.html", context)


def _row(workflow_id: str, declared: str, count: concurrency.GroupCount | None, now: Any) -> dict[str, Any]:
    return {
        "workflow_id": workflow_id,
        "declared": declared,
        "capacity": count.capacity if count is not None else None,
        "running": count.running if count is not None else 0,
        "queued": count.queued if count is not None else 0,
        "wait": limits.wait_text(count.oldest_queued, now) if count is not None else "",
        "queued_url": list_url(workflow_id, "queued"),
    }


def _key_row(count: concurrency.GroupCount, now: Any) -> dict[str, Any]:
    return {
        "workflow_id": count.group.flow_id,
        "key": count.group.key,
        "capacity": count.capacity,
        "running": count.running,
        "queued": count.queued,
        "wait": limits.wait_text(count.oldest_queued, now),
    }
