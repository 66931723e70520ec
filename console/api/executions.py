"""Routes about executions: the list, search, describe, inputs, history, diagram, signal, cancel and
cancel-all.

The literal paths (`/executions/search`, `/executions/cancel`) are declared before `/executions/{eid}` so
that Django's resolver, which takes the first pattern that matches, reaches them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Body, Field, Query, Router, Schema

from flowdeck.console import activity, auth, drawn, limits, refusals, runtime, schemas, states
from flowdeck.console.api import inputs
from flowdeck.console.api.errors import ApiError
from flowdeck.console.api.responses import DIAGRAM_OPENAPI, diagram_format, errors, text_response
from flowdeck.console.views import list_query
from flowdeck.engine import errors as engine_errors
from flowdeck.engine import render
from flowdeck.engine.engine import ExecutionDetail, SearchResult
from flowdeck.store import spi

__all__ = ["router"]

router = Router(tags=["executions"])

_INT_MAX = 2**31 - 1


_INSTANT = "an instant: ISO 8601 (2026-12-01T15:30Z; UTC without an offset) or an age back from now (15m)"


class ListQuery(Schema):
    """The console list's query words (`console.views.list_query`): a list URL's query string is a query
    of this route too."""

    status: schemas.Text = Field(
        "", description="a filter word (running, failed:<kind>, waiting:<name>, …) or parked"
    )
    workflow: schemas.IdFilter = Field("", description="only this workflow (its id; blank for all)")
    q: schemas.Text = Field(
        "", description="an id prefix and any field: or text: terms: " + schemas.SEARCH_TERMS_WORDS
    )
    sort: schemas.Text = Field("created", description="created or updated: newest first by that instant")
    created_from: schemas.Text = Field("", description="created on or after this day (YYYY-MM-DD, UTC)")
    created_to: schemas.Text = Field("", description="created on or before this day (YYYY-MM-DD, UTC)")
    created_after: schemas.Text = Field("", description=f"created at or after {_INSTANT}")
    created_before: schemas.Text = Field("", description=f"created before {_INSTANT}")
    updated_after: schemas.Text = Field(
        "", description=f"last changed (an ended execution: ended) at or after {_INSTANT}"
    )
    updated_before: schemas.Text = Field("", description=f"last changed before {_INSTANT}")
    limit: schemas.Integer = Field(25, ge=1, le=schemas.MAX_PAGE_SIZE, description=schemas.PAGE_SIZE_WORDS)
    offset: schemas.Integer = Field(0, ge=0, le=_INT_MAX, description="matches to skip")


@router.get("/executions", response={200: schemas.SearchResponse, **errors()}, by_alias=True)
async def list_executions(request: HttpRequest, params: Query[ListQuery]) -> schemas.SearchResponse:
    """Executions as the console's list shows them: the same filters (`parked` too), order and creation
    window, newest first; `total` counts every match. A value a parameter cannot take is a 400 whose
    `detail.parameter` names it."""
    words = {k: v for k, v in params.model_dump().items() if isinstance(v, str)}
    try:
        query = list_query.Query.of(words)
        list_query.store_filter(query.status, frozenset())
    except refusals.Refused as refused:
        raise ApiError(400, "invalid_parameter", str(refused), {"parameter": refused.what}) from None
    except spi.FilterParseError as problem:
        raise ApiError(400, "invalid_filter", f"status: {problem}", {"parameter": "status"}) from None
    engine = await runtime.engine()
    served = await states.served_by(engine)
    try:
        result = await query.search(engine, served, params.limit, params.offset)
    except spi.FilterParseError as problem:
        raise ApiError(400, "invalid_filter", f"q: {problem}", {"parameter": "q"}) from None
    return await _page(engine, result, served)


@router.post("/executions/search", response={200: schemas.SearchResponse, **errors()}, by_alias=True)
async def search_executions(request: HttpRequest, payload: schemas.SearchRequest) -> schemas.SearchResponse:
    """Executions matching the filter and every `where` term (`field:order.customer=ada`), newest first;
    `total` counts every match. An unknown filter word, a bare `failed:` or `waiting:`, a term that is not
    one, or a negative offset is a 400."""
    engine = await runtime.engine()
    result = await engine.executions.search(
        payload.workflow_id, payload.status, payload.limit, payload.offset, payload.id_prefix, payload.where
    )
    served = await states.served_by(engine)
    return await _page(engine, result, served)


async def _page(engine: Any, result: SearchResult, served: frozenset[str]) -> schemas.SearchResponse:
    """A page of executions on the wire, each queued one with its place in its limit's line."""
    queues = await limits.queues_for(engine.store, result.items, served)
    items = [schemas.execution_info_of(s, served, queues.get(s.execution_id)) for s in result.items]
    return schemas.SearchResponse(items=items, total=result.total)


@router.post("/executions/cancel", response={200: schemas.CancelAllResponse, **errors()}, by_alias=True)
async def cancel_all_executions(
    request: HttpRequest, payload: schemas.CancelAllRequest
) -> schemas.CancelAllResponse:
    """Ask every unended execution (of one workflow, or of all) to cancel; answers how many asks were new."""
    await auth.require_operator(request)
    engine = await runtime.engine()
    actor = auth.actor_of(request)
    async with activity.recording(
        actor, "api", "bulk:cancel-all", workflow_id=payload.workflow_id or "", reason=payload.reason
    ) as act:
        requested = await engine.executions.cancel_all(payload.workflow_id, payload.reason, actor=actor)
        act.detail["requested"] = requested
    return schemas.CancelAllResponse(requested=requested)


@router.get(
    "/executions/{execution_id}", response={200: schemas.ExecutionDetailDto, **errors(404)}, by_alias=True
)
async def describe_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam
) -> schemas.ExecutionDetailDto:
    engine = await runtime.engine()
    detail = await engine.executions.describe(execution_id)
    served = await states.served_by(engine)
    queued = await limits.queue_for(engine.store, detail.state, served)
    return schemas.execution_detail_of(detail, served, queued)


def _describe_named(name: str) -> Callable[[HttpRequest], Awaitable[schemas.ExecutionDetailDto]]:
    async def describe(request: HttpRequest) -> schemas.ExecutionDetailDto:
        return await describe_execution(request, name)

    return describe


# Django takes the first pattern that matches, so the literal paths above would answer 405 to a GET of an
# execution named "search" or "cancel"; these (kept out of the document) describe it instead.
for _literal in ("search", "cancel"):
    router.get(
        f"/executions/{_literal}",
        response={200: schemas.ExecutionDetailDto, **errors(404)},
        by_alias=True,
        include_in_schema=False,
        operation_id=f"describe_execution_named_{_literal}",
    )(_describe_named(_literal))


@router.get(
    "/executions/{execution_id}/inputs",
    response={200: list[schemas.InputInfoDto], **errors(404)},
    by_alias=True,
)
async def list_execution_inputs(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam
) -> list[schemas.InputInfoDto]:
    """The declared inputs of the execution's version and whether each arrived (404 when this server does
    not serve that version)."""
    engine = await runtime.engine()
    detail = await engine.executions.describe(execution_id)
    if detail.progress is None:
        raise engine_errors.FlowNotRegistered(f"{detail.flow_id}@{detail.state.hash}")
    return [schemas.input_info_of(i) for i in detail.inputs]


class HistoryQuery(Schema):
    limit: schemas.Integer = Field(50, ge=-_INT_MAX, le=_INT_MAX, description="page size; negative means all")
    offset: schemas.Integer = Field(0, ge=0, le=_INT_MAX, description="events to skip")
    after: schemas.Integer = Field(
        0,
        ge=0,
        le=_INT_MAX,
        description="only the events after this seq (a client that has the events up to seq N asks for "
        "after=N); with it, offset counts from there",
    )


@router.get(
    "/executions/{execution_id}/history", response={200: schemas.HistoryResponse, **errors()}, by_alias=True
)
async def read_execution_history(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, page: Query[HistoryQuery]
) -> schemas.HistoryResponse:
    """Events in append order. An unknown execution answers an empty page (spec §1, route 7). With
    `limit=-1` this is the whole history, the document the console's timeline saves as JSON; `after=N`
    answers the events after seq N (seqs count from 1 in append order, so that is offset N)."""
    engine = await runtime.engine()
    limit = None if page.limit < 0 else page.limit
    offset = page.offset + page.after
    return schemas.history_of(await engine.executions.history(execution_id, limit, offset))


@router.get("/executions/{execution_id}/diagram", response=errors(404), openapi_extra=DIAGRAM_OPENAPI)
async def draw_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, format: schemas.Text | None = None
) -> HttpResponse:
    """The execution's version with its progress painted on; a parked one's (a version no process here
    serves) from the graph the store kept for its version, as the console draws it."""
    engine = await runtime.engine()
    fmt = diagram_format(format)
    found = await drawn.drawable(engine, await engine.executions.describe(execution_id))
    if found.flow is None:  # neither served nor kept by the store: the engine's own refusal says why
        return text_response(request, await engine.executions.diagram(execution_id, fmt), fmt)
    return text_response(request, render.render(found.flow, fmt, progress=found.detail.progress), fmt)


_SIGNAL_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": 'The value, as raw JSON text (`42`, `"hello"`, `{"id": 7}`); it must validate '
        "against the input's JSON schema (see the execution's inputs).",
        "content": {"application/json": {"schema": {}}},
    }
}


@router.post(
    "/executions/{execution_id}/signal/{name}",
    response={200: schemas.OkResponse, **errors(404, 409)},
    openapi_extra=_SIGNAL_BODY,
    by_alias=True,
)
async def signal_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, name: schemas.NameParam
) -> schemas.OkResponse:
    """Deliver input `name`. 404 unknown execution or unserved version, 409 ended or already delivered,
    400 an undeclared input or a value failing its schema (checked in that order). Needs
    `flowdeck_console.run_executions` (403, before anything else)."""
    await auth.require_runner(request)
    engine = await runtime.engine()
    async with activity.recording(
        auth.actor_of(request),
        "api",
        "signal",
        execution_ids=[execution_id],
        input=name,
        size=len(request.body),
    ):
        try:
            value = json.loads(request.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            await _signal_target(engine, execution_id)
            raise ApiError(400, "malformed_body", f"the body is not JSON: {error}") from error
        detail = await _signal_target(engine, execution_id)
        if detail.progress is not None:  # a version this process serves: checked against that version
            inputs.check_input(detail.flow_id, name, value, engine.flow_of(detail.state))
        await engine.executions.signal(execution_id, name, value)
    return schemas.OkResponse()


async def _signal_target(engine: Any, execution_id: str) -> ExecutionDetail:
    """The checks a signal makes before it looks at its body (404 unknown, 409 ended)."""
    detail = await engine.executions.describe(execution_id)
    if detail.status.terminal:
        raise engine_errors.FlowExecutionTerminal(execution_id, detail.status.show())
    return detail


@router.post(
    "/executions/{execution_id}/cancel",
    response={200: schemas.CancelResponse, 202: schemas.CancelResponse, **errors(404)},
    by_alias=True,
)
async def cancel_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, payload: schemas.CancelRequest = Body(None)
) -> tuple[int, schemas.CancelResponse]:
    """Ask the execution to cancel: 202 accepted, 200 already requested, 200 already ended (with its
    status); 404 for an id that names no execution (nothing is written)."""
    await auth.require_operator(request)
    engine = await runtime.engine()
    reason = payload.reason if payload else ""
    actor = auth.actor_of(request)
    async with activity.recording(actor, "api", "cancel", execution_ids=[execution_id], reason=reason) as act:
        outcome = await engine.executions.cancel(execution_id, reason, actor=actor)
        act.cancel_outcome(outcome)
    match outcome:
        case spi.Accepted():
            return 202, schemas.CancelResponse(outcome="accepted")
        case spi.AlreadyRequested():
            return 200, schemas.CancelResponse(outcome="already-requested")
        case spi.AlreadyTerminal(status):
            return 200, schemas.CancelResponse(outcome="already-terminal", status=status.show())
    raise AssertionError("unreachable: every cancel outcome is matched")
