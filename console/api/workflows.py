"""Routes about workflows: list, describe, draw, start an execution, and the parked executions."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Body, Router

from flowdeck.console import activity, auth, runtime, schemas, states
from flowdeck.console.api import inputs
from flowdeck.console.api.responses import DIAGRAM_OPENAPI, diagram_format, errors, text_response
from flowdeck.engine import graph_document, render

__all__ = ["router"]

router = Router(tags=["workflows"])


@router.get("/workflows", response={200: list[schemas.WorkflowInfoDto], **errors()}, by_alias=True)
async def list_workflows(request: HttpRequest) -> list[schemas.WorkflowInfoDto]:
    """Every registered workflow (its newest version), as the store knows them."""
    engine = await runtime.engine()
    return [schemas.workflow_info_of(info) for info in await engine.workflows.list()]


@router.get("/workflows/{workflow_id}", response={200: schemas.WorkflowInfoDto, **errors(404)}, by_alias=True)
async def describe_workflow(
    request: HttpRequest, workflow_id: schemas.WorkflowIdParam
) -> schemas.WorkflowInfoDto:
    engine = await runtime.engine()
    return schemas.workflow_info_of(await engine.workflows.describe(workflow_id))


@router.get(
    "/workflows/{workflow_id}/diagram",
    response=errors(404),
    openapi_extra=DIAGRAM_OPENAPI,
)
async def draw_workflow(
    request: HttpRequest, workflow_id: schemas.WorkflowIdParam, format: schemas.Text | None = None
) -> HttpResponse:
    """The newest registered version's structure; `format` is mermaid (default), dot, bpmn, elk or json."""
    engine = await runtime.engine()
    fmt = diagram_format(format)
    return text_response(request, await engine.workflows.diagram(workflow_id, fmt), fmt)


@router.get(
    "/workflows/{workflow_id}/versions/{hash}/diagram",
    response=errors(404),
    openapi_extra=DIAGRAM_OPENAPI,
)
async def draw_workflow_version(
    request: HttpRequest,
    workflow_id: schemas.WorkflowIdParam,
    hash: schemas.Text,
    format: schemas.Text | None = None,
) -> HttpResponse:
    """Any registered version's structure, drawn from the graph the store kept at its registration (so a
    version no process serves still draws); 404 for an unknown version or one registered before graphs
    were kept. `format` as for the newest version's diagram."""
    engine = await runtime.engine()
    fmt = diagram_format(format)
    info = await engine.store.get_workflow(workflow_id, hash)
    if info is None:
        raise Http404(f"no version {hash!r} of workflow {workflow_id!r}")
    if info.graph is None:
        raise Http404(f"version {hash!r} of {workflow_id!r} was registered before the store kept diagrams")
    try:
        flow = graph_document.flow_of(info.graph)
    except graph_document.GraphDocumentError as error:
        raise Http404(str(error)) from None
    return text_response(request, render.render(flow, fmt), fmt)


@router.post(
    "/workflows/{workflow_id}/executions",
    response={200: schemas.StartResponse, **errors(404, 409)},
    by_alias=True,
)
async def start_execution(
    request: HttpRequest, workflow_id: schemas.WorkflowIdParam, payload: schemas.StartRequest = Body(None)
) -> schemas.StartResponse:
    """Start an execution of the newest version; `inputs` are seeded as delivered, each checked against the
    input's schema first (400), and `executionId` must be new (409); `priority` from -100 to 100 (higher
    claimed first; the workflow's default when absent). Needs `console.run_executions` (403)."""
    await auth.require_runner(request)
    engine = await runtime.engine()
    payload = payload or schemas.StartRequest()
    async with activity.recording(
        auth.actor_of(request),
        "api",
        "start",
        execution_ids=[payload.execution_id] if payload.execution_id else [],
        workflow_id=workflow_id,
        inputs=sorted(payload.inputs or {}),
    ) as act:
        inputs.check_inputs(workflow_id, payload.inputs)
        eid = await engine.workflows.start(
            workflow_id, execution_id=payload.execution_id, inputs=payload.inputs, priority=payload.priority
        )
        act.execution_ids = [eid]
    return schemas.StartResponse(execution_id=eid)


@router.get(
    "/workflows/{workflow_id}/parked",
    response={200: list[schemas.ExecutionInfoDto], **errors(404)},
    by_alias=True,
)
async def list_parked_executions(
    request: HttpRequest, workflow_id: schemas.WorkflowIdParam
) -> list[schemas.ExecutionInfoDto]:
    """Unended executions started under a version this server does not serve (held, never failed)."""
    engine = await runtime.engine()
    await engine.workflows.describe(workflow_id)
    served = await states.served_by(engine)
    return [schemas.execution_info_of(state, served) for state in await engine.parked(workflow_id)]
