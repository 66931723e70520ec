"""The operator verbs of DESIGN.md §3 over HTTP: resume (dry run, or go), answer, end.

Changing an execution needs the `flowdeck_console.operate_executions` permission; the dry run only reads. The
caller's username is recorded as the actor on the events the verb writes. Refusals (not stopped, a
worker's claim held, conflicts on resume, already answered) are 409s whose `detail` says why.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Body, Router

from flowdeck.console import activity, auth, runtime, schemas
from flowdeck.console.api.responses import errors

__all__ = ["router"]

router = Router(tags=["operators"])


@router.post(
    "/executions/{execution_id}/resume",
    response={200: schemas.ResumeReportDto, **errors(404, 409)},
    by_alias=True,
)
async def resume_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, payload: schemas.ResumeRequest = Body(None)
) -> schemas.ResumeReportDto:
    """Dry-run the execution on the newest version of its workflow and answer the report; with `go`,
    resume it for real (409 with the report as `detail` when the report has conflicts)."""
    go = bool(payload and payload.go)
    if go:
        await auth.require_operator(request)
    engine = await runtime.engine()
    actor = auth.actor_of(request)
    action = "resume:go" if go else "resume:dry-run"
    async with activity.recording(actor, "api", action, execution_ids=[execution_id]) as act:
        report = await engine.resume(execution_id, go=go, actor=actor if go else None)
        act.detail.update(activity.report_detail(report))
    return schemas.resume_report_of(report, resumed=go)


@router.post(
    "/executions/{execution_id}/answer/{node}",
    response={200: schemas.OkResponse, **errors(404, 409)},
    by_alias=True,
)
async def answer_node(
    request: HttpRequest,
    execution_id: schemas.ExecutionIdParam,
    node: schemas.NameParam,
    payload: schemas.AnswerRequest = Body(None),
) -> schemas.OkResponse:
    """Record what node `node` (a durable path) did, for a stopped execution; then resume it."""
    await auth.require_operator(request)
    engine = await runtime.engine()
    value = payload.value if payload else None
    actor = auth.actor_of(request)
    size = activity.value_size(value)
    async with activity.recording(actor, "api", "answer", execution_ids=[execution_id], node=node, size=size):
        await engine.answer(execution_id, node, value, actor=actor)
    return schemas.OkResponse()


@router.post(
    "/executions/{execution_id}/end",
    response={200: schemas.OkResponse, **errors(404, 409)},
    by_alias=True,
)
async def end_execution(
    request: HttpRequest, execution_id: schemas.ExecutionIdParam, payload: schemas.EndRequest
) -> schemas.OkResponse:
    """End a stopped execution Failed(reason) with no undos: a person has put the world right by hand."""
    await auth.require_operator(request)
    engine = await runtime.engine()
    actor = auth.actor_of(request)
    async with activity.recording(actor, "api", "end", execution_ids=[execution_id], reason=payload.reason):
        await engine.end(execution_id, payload.reason, actor=actor)
    return schemas.OkResponse()
