"""Bulk operations by query over HTTP: `POST /executions/bulk` acts on every execution a filter matches (a
resume without `go` is the dry run), `GET /operations/{id}` reads one back with its progress and each
execution's outcome. See `flowdeck.console.bulk` for what an operation is.

Every bulk request needs the `console.operate_executions` permission (the dry run too: it is the first
step of an operation and is recorded as one). `expectedCount` makes the request a confirmation: when the
filter matches another number now, nothing is done (409 `count_changed`). A request with no filter acts on
every execution, so it must say `"all": true` and give `expectedCount` (else a 400 naming what is missing).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, Router
from pydantic import ConfigDict, WithJsonSchema

from flowdeck.console import auth, bulk, runtime, schemas, states
from flowdeck.console.api.errors import ApiError
from flowdeck.console.api.responses import errors
from flowdeck.store import filter_limits

__all__ = ["router"]

router = Router(tags=["bulk"])


# Inside an optional, pydantic writes a validator's bounds into the document as `ge`/`le`, which no client
# reads: the bounds are spelled out as JSON Schema too.
_COUNT = {"type": "integer", "minimum": 0, "maximum": schemas.INT_MAX}
_ID = {"type": "integer", "minimum": 1, "maximum": schemas.INT_MAX}
Count = Annotated[schemas.Integer, Field(ge=0, le=schemas.INT_MAX), WithJsonSchema(_COUNT)]
OperationId = Annotated[schemas.Integer, Field(ge=1, le=schemas.INT_MAX), WithJsonSchema(_ID)]


# What a bulk request must name, as JSON Schema: a filter (and then not `all`), or `all: true` with the count
# the operator saw (and then no filter), or a dry run's `fromOperation`. The document says what the server
# checks (`bulk.check_everything`), so a client (or schemathesis) is never told a refused body is valid.
_FILTERS: list[dict[str, Any]] = [
    {"required": ["status"], "properties": {"status": {"type": "string"}}},
    {"required": ["workflowId"], "properties": {"workflowId": {"type": "string", "minLength": 1}}},
    {"required": ["idPrefix"], "properties": {"idPrefix": {"type": "string", "minLength": 1}}},
    {"required": ["where"], "properties": {"where": {"type": "array", "minItems": 1}}},
]
# (if/then/else: the generated Python client reads the properties and leaves these rules to the server)
_POPULATION = {
    "if": {"anyOf": _FILTERS},
    "then": {"properties": {"all": {"const": False}}},
    "else": {
        "anyOf": [
            {"required": ["fromOperation"], "properties": {"fromOperation": {"type": "integer"}}},
            {
                "required": ["all", "expectedCount"],
                "properties": {"all": {"const": True}, "expectedCount": {"type": "integer"}},
            },
        ]
    },
}


class BulkRequest(schemas.WireRequest):
    """The filter (as `POST /executions/search` takes it) and the action; `fromOperation` resumes for real
    exactly the executions a dry run found clean."""

    model_config = ConfigDict(json_schema_extra=_POPULATION)

    action: Literal["cancel", "resume", "end"]
    go: bool = False
    status: Annotated[str, WithJsonSchema({"type": "string", "pattern": schemas.STATUS_PATTERN})] | None = (
        None
    )
    workflow_id: schemas.Text | None = None
    id_prefix: schemas.Text | None = None
    where: list[schemas.WHERE_TERM] = Field(
        default_factory=list,
        max_length=filter_limits.MAX_TERMS,
        description="field: and text: terms every match keeps: " + schemas.SEARCH_TERMS_WORDS,
    )
    reason: schemas.Text = ""
    all: bool = Field(
        False,
        description="act on every execution: required with no filter, refused with one (and then "
        "expectedCount is required too)",
    )
    expected_count: Count | None = None
    from_operation: OperationId | None = None


class OperationDto(schemas.Wire):
    """A bulk operation: `state` is running, done or interrupted (its process stopped mid-way); `done`
    of `total` executions acted on (`origin`: the operation whose executions it took, when not a
    filter's); `outcomes` per execution (accepted, already-requested,
    already-terminal, refused, invalid, error) with `codes` and `why` for the others. A dry run's
    `summary` lists the ids that would resume cleanly, those that would resume and stop again at once
    (`stops_again`: on the version they stopped under, the stop unanswered, so the same mistake stops
    them again), those that would stop with F0101 or F0102, those
    with nothing to resume (`not_resumable`: neither stopped nor parked) and the `other` ones (ended,
    unknown)."""

    id: int
    action: str
    actor: str
    source: str
    at: str
    state: str
    filter: dict[str, Any]
    filter_words: str
    origin: int | None = None
    matched: int
    capped: bool
    total: int
    done: int
    counts: dict[str, int]
    outcomes: dict[str, str]
    codes: dict[str, str]
    why: dict[str, str]
    summary: dict[str, list[str]] | None = None


def _dto(op: bulk.Operation) -> OperationDto:
    return OperationDto(**op.as_json())


async def _population(payload: BulkRequest) -> tuple[bulk.Where | None, list[str], int | None, int | None]:
    """The filter, the ids the operation acts on and how many matched (None when they come from a dry
    run), and the dry run's id."""
    engine = await runtime.engine()
    if payload.from_operation is not None:
        origin = await bulk.load(payload.from_operation)
        if origin is None:
            raise ApiError(404, "operation_not_found", f"no bulk operation {payload.from_operation}")
        if origin.action != bulk.ACTIONS["resume"] or not payload.go:
            raise ApiError(
                409,
                "not_a_dry_run",
                "fromOperation names a bulk resume dry run, and asks for it with go: true",
            )
        return None, origin.summary()["clean"], None, origin.id
    if payload.status == "":
        raise ApiError(
            400, "invalid_filter", "status is empty: name a status (running, failed:<kind>…) or leave it out"
        )
    where = bulk.Where(
        payload.status or "", payload.workflow_id or "", "", payload.id_prefix or "", tuple(payload.where)
    )
    try:
        bulk.check_everything(where, payload.all, payload.expected_count)
    except bulk.EverythingRefused as refused:
        raise ApiError(400, "invalid_filter", str(refused), {"parameter": refused.what}) from None
    if where.workflow:
        await engine.workflows.describe(where.workflow)
    ids, matched = await bulk.snapshot(engine, where)
    return where, ids, matched, None


@router.post(
    "/executions/bulk", response={200: OperationDto, 202: OperationDto, **errors(404, 409)}, by_alias=True
)
async def act_on_matching_executions(request: HttpRequest, payload: BulkRequest) -> Any:
    """Act on every execution the filter matches now (at most 10,000, newest first: `capped` says when
    more matched). 200 with the outcomes when it finished in the request, 202 while it runs on (poll
    `GET /operations/{id}`). A bad filter is a 400; a filter matching nothing is a finished operation."""
    await auth.require_operator(request)
    engine = await runtime.engine()
    where, ids, matched, origin = await _population(payload)
    if payload.expected_count is not None and payload.expected_count != len(ids):
        raise ApiError(
            409,
            "count_changed",
            f"the filter matches {len(ids)} now, not {payload.expected_count}: nothing was done",
            {"matched": len(ids)},
        )
    verb = "resume:go" if payload.action == "resume" and payload.go else payload.action
    reason = payload.reason or ("ended by an operator" if verb == "end" else "")
    actor = auth.actor_of(request)
    op_id = await bulk.create(
        actor, "api", verb, ids, where=where, matched=matched, reason=reason, origin=origin
    )
    await bulk.launch(engine, op_id, len(ids))
    op = await bulk.load(op_id)
    assert op is not None  # just written
    return (200 if op.state == "done" else 202), _dto(op)


@router.get("/operations/{op_id}", response={200: OperationDto, **errors(404)}, by_alias=True)
async def describe_operation(request: HttpRequest, op_id: int) -> OperationDto:
    """A bulk operation: how far it got and what came of each execution."""
    op = await bulk.load(op_id)
    if op is None:
        raise ApiError(404, "not_found", f"no bulk operation {op_id}")
    return _dto(op)


async def _describe_bulk(request: HttpRequest) -> schemas.ExecutionDetailDto:
    engine = await runtime.engine()
    detail = await engine.executions.describe("bulk")
    return schemas.execution_detail_of(detail, await states.served_by(engine))


# Django takes the first pattern that matches: without this, a GET of an execution named "bulk" would be
# a 405 of the route above (kept out of the document, as the executions router does for its literals).
router.get(
    "/executions/bulk",
    response={200: schemas.ExecutionDetailDto, **errors(404)},
    by_alias=True,
    include_in_schema=False,
    operation_id="describe_execution_named_bulk",
)(_describe_bulk)
