"""Workflows (versions with what this process serves and their executions, nodes, inputs, outputs, counts
per status, a diagram with live per-node counts and a start form), parked executions (grouped by version,
resumed onto the newest version or cancelled), and engine health (each worker process's heartbeat and the
claims per executor, from the store; this process's own engine)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from flowdeck.console import activity, backlog, forms, heartbeat, refusals, runtime, states
from flowdeck.console.discovery import flow_versions, registered_flows
from flowdeck.console.models import RUN_PERMISSION
from flowdeck.console.views import common, diagram, workflow_node
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, render, schema
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.graph import build_graph
from flowdeck.store import spi

__all__ = [
    "health",
    "health_executors",
    "parked_cancel",
    "parked_resume",
    "start",
    "workflow",
    "workflow_counts",
    "workflow_diagram",
    "workflows",
]


async def _status_counts(store: spi.FlowStore, workflow_id: str | None = None) -> dict[str, dict[str, int]]:
    """Per workflow id: its executions per state word (`console.states`: parked apart from running)."""
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    served = await states.served_by(await runtime.engine())
    for count in await states.count_by_state(store, served, workflow_id):
        counts[count.workflow_id][count.status] = count.executions
    return counts


@login_required
@require_GET
async def workflows(request: HttpRequest) -> HttpResponse:
    engine = await runtime.engine()
    counts = await _status_counts(engine.store)
    shown = []
    for info in await engine.workflows.list():
        versions = await engine.store.list_workflow_versions(info.id)
        shown.append({"info": info, "versions": versions, "counts": sorted(counts.get(info.id, {}).items())})
    return await common.page(
        request, "flowdeck/console/workflows.html", {"workflows": shown, "nav": "workflows"}
    )


async def _info(workflow_id: str) -> Any:
    engine = await runtime.engine()
    try:
        return await engine.workflows.describe(workflow_id)
    except errors.FlowNotRegistered:
        raise refusals.unknown("workflow id", workflow_id, f"no workflow {workflow_id!r}") from None


def _graph_ids(workflow_id: str) -> dict[str, str]:
    """Drawn node id → durable path, so the page can put counts on the drawing."""
    flow = registered_flows().get(workflow_id)
    if flow is None:
        return {}
    return {n.id: n.path for n in build_graph(flow).nodes if n.path}


async def version_rows(workflow_id: str, stored: list[spi.WorkflowInfo]) -> list[dict[str, Any]]:
    """Every version of `workflow_id` the store knows, oldest first, with whether this process serves it
    (the versions its flows module declares; the last is the newest, what new starts use), when it was
    first registered, and its unended and total executions. Unended executions of a version nobody serves
    are parked."""
    served = [schema.structural_hash(flow) for flow in flow_versions().get(workflow_id, ())]
    engine = await runtime.engine()
    versions = await engine.store.count_by_version(workflow_id)
    counts = {v.hash: (v.unended, v.total) for v in versions if v.total}
    registered = {v.hash: v.registered for v in versions if v.registered is not None}
    known = [info.structural_hash for info in stored]
    labels = {info.structural_hash: info.meta.version for info in stored}
    rows = []
    for digest in [*known, *sorted(set(counts) - set(known))]:
        unended, total = counts.get(digest, (0, 0))
        rows.append(
            {
                "hash": digest,
                "label": labels.get(digest, ""),
                "served": digest in served,
                "newest": bool(served) and digest == served[-1],
                "registered": registered.get(digest),
                "unended": unended,
                "total": total,
            }
        )
    return rows


@login_required
@require_GET
async def workflow(request: HttpRequest, workflow_id: str) -> HttpResponse:
    info = await _info(workflow_id)
    engine = await runtime.engine()
    versions = list(await engine.store.list_workflow_versions(workflow_id))
    counts = await _status_counts(engine.store, workflow_id)
    context = {
        "info": info,
        "versions": await version_rows(workflow_id, versions),
        "status_counts": sorted(counts.get(workflow_id, {}).items()),
        "node_numbers": list((await workflow_node.numbers(workflow_id)).values()),
        "node_recent": workflow_node.RECENT,
        "graph_ids": _graph_ids(workflow_id),
        **diagram.context(),
        "nav": "workflows",
        "can_run": await common.can_run(request),
        "run_permission": RUN_PERMISSION,
    }
    return await common.page(request, "flowdeck/console/workflow.html", context)


@login_required
@require_GET
async def workflow_counts(request: HttpRequest, workflow_id: str) -> HttpResponse:
    await _info(workflow_id)
    found = await workflow_node.numbers(workflow_id)
    counts = {path: entry.now for path, entry in found.items() if entry.now}
    return JsonResponse({"counts": counts, "nodes": {path: entry.to_json() for path, entry in found.items()}})


@login_required
@require_GET
async def workflow_diagram(request: HttpRequest, workflow_id: str, format: str) -> HttpResponse:
    flow = registered_flows().get(workflow_id)
    if flow is None:
        raise refusals.unknown("workflow id", workflow_id, f"no workflow {workflow_id!r}")
    if format not in ("mermaid", "dot", "bpmn", "elk"):
        raise Http404(f"no diagram format {format!r}")
    if format == "dot":
        return HttpResponse(
            await sync_to_async(render.render_svg)(flow), content_type="image/svg+xml; charset=utf-8"
        )
    return HttpResponse(render.render(flow, format), content_type="text/plain; charset=utf-8")


@login_required
@require_POST
async def start(request: HttpRequest, workflow_id: str) -> HttpResponse:
    """Start an execution with an optional id and the inputs typed as JSON (blank ones left out). Needs
    `flowdeck_console.run_executions`."""
    if not await common.can_run(request):
        return await common.forbidden(request, RUN_PERMISSION)
    wanted = request.POST.get("execution_id", "").strip() or None
    actor = str((await request.auser()).get_username())
    async with activity.recording(
        actor, "console", "start", execution_ids=[wanted] if wanted else [], workflow_id=workflow_id
    ) as act:
        info = await _info(workflow_id)
        inputs: dict[str, Any] = {}
        for item in info.inputs:
            text = request.POST.get(f"input:{item.name}", "").strip()
            if not text:
                continue
            try:
                inputs[item.name] = forms.read_json_text(text)
            except ValueError as error:
                act.refused(error)
                return await _message(request, "error", f"{item.name}: {error}", 400)
        act.detail["inputs"] = sorted(inputs)
        engine = await runtime.engine()
        try:
            eid = await engine.workflows.start(workflow_id, execution_id=wanted, inputs=inputs)
        except errors.FlowError as error:
            act.refused(error)
            return await _message(request, "error", str(error), 400)
        act.execution_ids = [eid]
    return await common.fragment(request, "flowdeck/console/partials/started.html", {"execution_id": eid})


async def _message(request: HttpRequest, level: str, text: str, status: int = 200) -> HttpResponse:
    return await common.fragment(
        request, "flowdeck/console/partials/message.html", {"level": level, "text": text}, status=status
    )


# ------------------------------------------------------------------------------------------- parked


async def _group(workflow_id: str, digest: str) -> list[Any]:
    """The parked executions of one version; `refusals.Refused` for none and a workflow id breaking the
    id rule (it could name no group)."""
    engine = await runtime.engine()
    group = [s for s in await engine.parked(workflow_id) if s.hash == digest]
    if not group:
        refusals.check_filter("workflow id", workflow_id)
    return group


@login_required
@require_POST
async def parked_resume(request: HttpRequest, workflow_id: str, digest: str) -> HttpResponse:
    """Dry-run every execution of the group on the newest version; with `go`, resume those without
    conflicts (operators only)."""
    go = request.POST.get("go") == "1"
    if go and not await common.can_operate(request):
        return await common.forbidden(request)
    engine = await runtime.engine()
    actor = str((await request.auser()).get_username())
    results, words = [], {}
    action = "bulk:resume:go" if go else "bulk:resume:dry-run"
    async with activity.recording(actor, "console", action, workflow_id=workflow_id, version=digest) as act:
        for state in await _group(workflow_id, digest):
            eid = state.execution_id
            try:
                report = await engine.resume(eid, go=False)
                resumed = False
                if go and not report.conflicts:
                    await engine.resume(eid, go=True, actor=actor)
                    resumed = True
                results.append({"execution_id": eid, "report": report, "resumed": resumed})
                words[eid] = "refused" if go and not resumed else "accepted"
            except errors.FlowError as error:
                results.append({"execution_id": eid, "report": None, "error": str(error)})
                words[eid] = activity.outcome_of(error)[0]
        act.bulk(words)
    context = {"results": results, "go": go, "workflow_id": workflow_id, "hash": digest}
    return await common.fragment(request, "flowdeck/console/partials/parked_report.html", context)


@login_required
@require_POST
async def parked_cancel(request: HttpRequest, workflow_id: str, digest: str) -> HttpResponse:
    if not await common.can_operate(request):
        return await common.forbidden(request)
    engine = await runtime.engine()
    actor = str((await request.auser()).get_username())
    reason = request.POST.get("reason", "").strip()
    async with activity.recording(
        actor, "console", "bulk:cancel", workflow_id=workflow_id, version=digest, reason=reason
    ) as act:
        group = await _group(workflow_id, digest)
        words = {}
        for state in group:
            outcome = await engine.executions.cancel(state.execution_id, reason, actor=actor)
            words[state.execution_id] = act.cancel_outcome(outcome)
        act.bulk(words)
    return await _message(request, "ok", f"asked {len(group)} parked executions to cancel")


# ------------------------------------------------------------------------------------------- health


async def _claims(store: spi.FlowStore) -> list[tuple[str, list[str]]]:
    """The live claims per executor, by executor id."""
    return [(held.executor_id, list(held.execution_ids)) for held in await store.claims_by_executor()]


RECENT = timedelta(minutes=10)


async def _recent_executors(store: spi.FlowStore) -> list[dict[str, Any]]:
    """Executors that claimed executions lately (their ExecutionClaimed events), newest activity first:
    the workers of every process, as the store saw them."""
    return [
        {"executor": seen.executor_id, "claims": seen.claims, "last": seen.last}
        for seen in await store.recent_claimers(RECENT)
    ]


async def _executors_context(store: spi.FlowStore) -> dict[str, Any]:
    """The executors' heartbeats (every process running workers), for the page and its refreshed part."""
    try:
        found = await heartbeat.executors(store)
    except Exception as error:  # the page reports it rather than failing
        return {"executors": [], "executors_error": str(error), **_heartbeat_terms()}
    return {"executors": found, "executors_error": "", **_heartbeat_terms()}


def _heartbeat_terms() -> dict[str, Any]:
    every = heartbeat.heartbeat_interval().total_seconds()
    return {
        "heartbeat_seconds": f"{every:g}",
        "heard_within_seconds": int(heartbeat.HEARD_WITHIN.total_seconds()),
        "stale_after_seconds": f"{every * heartbeat.STALE_AFTER_BEATS:g}",
    }


@login_required
@require_GET
async def health_executors(request: HttpRequest) -> HttpResponse:
    """The executors part of the health page alone (the page refreshes it every few seconds)."""
    engine = await runtime.engine()
    context = await _executors_context(engine.store)
    return await common.fragment(request, "flowdeck/console/partials/executor_health.html", context)


async def _backlog(engine: FlowEngine) -> backlog.Backlog | None:
    """The ready backlog and claim latency, or None when the store does not answer (the page says so)."""
    try:
        return await backlog.read(engine)
    except spi.FlowStoreError:
        return None


@login_required
@require_GET
async def health(request: HttpRequest) -> HttpResponse:
    engine = await runtime.engine()
    store_error = ""
    try:
        await engine.store.list_workflows()
    except Exception as error:  # the page reports it rather than failing
        store_error = str(error)
    context = {
        **(await _executors_context(engine.store)),
        "nav": "health",
        "own": engine.health(),
        "here": [e.health() for e in heartbeat.in_this_process() if e is not engine],
        "backlog": await _backlog(engine),
        "claims": await _claims(engine.store),
        "recent": await _recent_executors(engine.store),
        "recent_minutes": int(RECENT.total_seconds() // 60),
        "store_error": store_error,
        "workflows": sorted(registered_flows()),
    }
    return await common.page(request, "flowdeck/console/health.html", context)
