"""What a resume came to, said again as the execution goes on: the resume's message on the execution page
is a live fragment of this view (`?since=SEQ`, the seq of the resume's own event), because the workers
take a resumed execution up in another process after the resume has answered."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from flowdeck.console import refusals, runtime
from flowdeck.console.views import common, outcomes
from flowdeck.console.views.signin import login_required

__all__ = ["outcome_context", "resumed"]


async def outcome_context(execution_id: str, since: int | None) -> dict[str, Any]:
    """What the resume at seq `since` (None: the newest resume) came to, and the address that says it
    again as the workers go on."""
    engine = await runtime.engine()
    state = await engine.store.get_execution(execution_id)
    if state is None:
        raise refusals.unknown("execution id", execution_id, f"no execution {execution_id!r}")
    events = list((await engine.store.get_history(execution_id)).events)
    seq = outcomes.resumed_seq(events) if since is None else since
    said = outcomes.resume_said(state, seq, events)
    url = reverse("flowdeck:console-execution-resumed", args=[execution_id])
    return {"outcome": said, "resumed_url": f"{url}?since={seq}"}


@login_required
@require_GET
async def resumed(request: HttpRequest, execution_id: str) -> HttpResponse:
    """The resume message again (`since`: the seq of the resume's event), as the execution goes on."""
    since = refusals.whole_number(request.GET, "since", 0)
    context = await outcome_context(execution_id, since)
    return await common.fragment(request, "flowdeck/console/partials/resume_outcome.html", context)
