"""What every console page shares: the status word a badge shows, what an execution waits for, the
operator check, and rendering (whole pages, or the fragment an htmx request asks for).

The badge (`console.badges`) follows the list's filter words (running·waiting, running·sleeping, parked,
cancelling, compensating, stopped, completed, failed, cancelled) and its colour is the diagram legend's
(`flowdeck.engine.render.common.COLOURS`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from flowdeck.console import badges, limits, live, refusals, runtime, states, waits
from flowdeck.console.conf import flowdeck_settings
from flowdeck.console.models import OPERATE_PERMISSION, RUN_PERMISSION
from flowdeck.engine import errors
from flowdeck.store import concurrency, spi

__all__ = [
    "Row",
    "WaitView",
    "badge_of",
    "can_operate",
    "can_run",
    "described",
    "forbidden",
    "page",
    "pretty_json",
    "row_of",
    "waits_of",
]

FOLD_CHARS = 600  # a value longer than this is folded (shown on demand)


WaitView = waits.Wait
"""One wait row (`flowdeck.console.waits.Wait`: the one place a wait is written)."""


@dataclass(frozen=True)
class Row:
    """An execution as a table row shows it."""

    execution_id: str
    workflow_id: str
    version: str
    badge: str
    status_text: str
    waits: tuple[WaitView, ...]
    created: datetime
    updated: datetime
    cancel_requested: bool
    status: badges.Badge
    duration: timedelta | None  # created to ended, or to `now` when unended (None: no `now` was given)
    ended: bool
    queue: str = ""  # a queued execution's place in its limit's line (`limits.queue_line`)


waits_of = waits.waits_of


def badge_of(state: spi.ExecutionState) -> str:
    """The one word a status badge shows (and its CSS class), parked aside (`flowdeck.console.badges`)."""
    return badges.badge_of(state).word


def row_of(
    state: spi.ExecutionState,
    served: Collection[str] | None = None,
    now: datetime | None = None,
    queued: concurrency.Queued | None = None,
) -> Row:
    """The row of `state`; `served` (version hashes some process serves) lets it read `parked`, `now`
    gives an unended execution its duration so far, `queued` a queued one its place in line."""
    ended = state.status.terminal
    end = state.updated if ended else now
    status = badges.badge_of(state, served)
    return Row(
        state.execution_id,
        state.flow_id,
        state.hash,
        status.word,
        states.standing_of(state, served).line,
        waits_of(state),
        state.created,
        state.updated,
        state.cancel_requested,
        status,
        None if end is None else max(timedelta(0), end - state.created),
        ended,
        limits.queue_line(queued) if queued is not None else "",
    )


def pretty_json(text: str) -> str:
    """A recorded JSON text, indented for reading (as it is, when it is not JSON)."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=False)
    except (ValueError, TypeError):
        return text


async def described(engine: Any, execution_id: str) -> Any:
    """The execution's description; for an id that names nothing, a 404, or `refusals.Refused` when the
    id breaks the id rule."""
    try:
        return await engine.executions.describe(execution_id)
    except errors.FlowExecutionNotFound:
        raise refusals.unknown("execution id", execution_id, f"no execution {execution_id!r}") from None


async def can_operate(request: HttpRequest) -> bool:
    """May the user run the operator verbs (cancel, resume for real, answer, end)?"""
    user = await request.auser()
    return bool(await user.ahas_perm(OPERATE_PERMISSION))


async def can_run(request: HttpRequest) -> bool:
    """May the user start executions and signal their inputs?"""
    user = await request.auser()
    return bool(await user.ahas_perm(RUN_PERMISSION))


async def forbidden(request: HttpRequest, permission: str = OPERATE_PERMISSION) -> HttpResponse:
    """The 403 of a verb the user may not use: the message in place for the console's own (htmx) forms,
    a whole styled page for anything else."""
    text = f"You need the {permission!r} permission to do this."
    if request.headers.get("HX-Request"):
        return await fragment(
            request, "flowdeck/console/partials/message.html", {"level": "error", "text": text}, 403
        )
    context = {"status": 403, "title": "Not allowed", "text": text, "path": request.get_full_path()}
    return await page(request, "flowdeck/console/forbidden.html", context, status=403)


async def page(
    request: HttpRequest, template: str, context: Mapping[str, Any], status: int = 200
) -> HttpResponse:
    """A whole page, stamped with the id of the newest event (where its websocket starts listening)."""
    after = await live.latest_event_id()
    user = await request.auser()
    full = {**context, "live_after": after, "user": user, "nav": context.get("nav", "")}
    html = await sync_to_async(render_to_string)(template, full, request)
    return HttpResponse(html, status=status)


LAG_SHOWN_AFTER = 1.0
"""Seconds behind its primary past which a page reading the replica says so."""


@dataclass(frozen=True)
class ReplicaNotice:
    """What a page reading the replica tells of it: how far behind it is, or that it does not answer."""

    lag: float | None  # None: the replica does not answer, and the page read the primary


async def replica_context() -> dict[str, Any]:
    """What a page or fragment that read through `runtime.reader()` says of the replica: nothing without one;
    with one, `replica_slot` (the page keeps a place for the notice, and the fragments it refreshes replace
    that place out of band, so a notice comes and goes without a reload) and `replica`, the notice, or None
    while the replica is less than `LAG_SHOWN_AFTER` behind."""
    if flowdeck_settings().read_replica_alias is None:
        return {}
    lag = await runtime.replica_lag()
    notice = None if lag is not None and lag <= LAG_SHOWN_AFTER else ReplicaNotice(lag)
    return {"replica_slot": True, "replica": notice}


async def fragment(
    request: HttpRequest, template: str, context: Mapping[str, Any], status: int = 200
) -> HttpResponse:
    html = await sync_to_async(render_to_string)(template, dict(context), request)
    if context.get("replica_slot"):  # the page's replica notice, replaced out of band (`replica_context`)
        notice = {"replica": context["replica"], "oob": True}
        html += await sync_to_async(render_to_string)("flowdeck/console/partials/replica_notice.html", notice)
    return HttpResponse(html, status=status)
