"""One execution: status and why it stopped or failed, waits with their deadlines, inputs with a signal form
each, fields, history, the live diagram, and the operator's actions (cancel; for a stopped execution
resume with its dry-run report, answer a node, end).

The page is made of fragments (`panel`, `inputs`, `fields`, `history`) that the page fetches again when its
websocket hears of the execution, so nothing is reloaded and a half-typed form is left alone (the script
skips a fragment holding the focus). Signalling needs `flowdeck_console.run_executions`; every other verb that
changes the execution needs the operator permission and records the user as the actor in the history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from flowdeck.console import activity, answers, drawn, forms, limits, refusals, runtime, states, timeline
from flowdeck.console.models import RUN_PERMISSION
from flowdeck.console.views import common, outcomes, parked, resumed
from flowdeck.console.views import diagram as diagram_view
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, render
from flowdeck.engine.engine import declared_inputs
from flowdeck.store import spi

__all__ = [
    "answer",
    "cancel",
    "diagram",
    "end",
    "execution",
    "fields",
    "history",
    "inputs",
    "panel",
    "resume",
    "signal",
]

HISTORY_PAGE = 100
DIAGRAM_FORMATS = ("mermaid", "dot", "bpmn", "elk")
_CONTENT_TYPES = {
    "mermaid": "text/plain; charset=utf-8",
    "dot": "image/svg+xml; charset=utf-8",
    "bpmn": "application/xml; charset=utf-8",
    "elk": "application/json; charset=utf-8",
}


async def _detail(execution_id: str) -> Any:
    return await common.described(await runtime.engine(), execution_id)


async def _answer_of(engine: Any, stop: Any, execution_id: str) -> dict[str, Any] | None:
    """Who answered an answered stop, and when (its Answered event); None for any other stop."""
    if stop is None or not stop.answered:
        return None
    events = (await engine.store.get_history(execution_id)).events
    said = [e for e in events if e.kind is spi.EventKind.ANSWERED and e.data.get("node") == stop.node]
    return {"actor": said[-1].data.get("actor"), "at": said[-1].timestamp} if said else None


async def _panel_context(request: HttpRequest, detail: Any) -> dict[str, Any]:
    engine = await runtime.engine()
    state = detail.state
    flow = engine.flow_of(state)
    hints = answers.hints(flow) if flow is not None else []
    served = await states.served_by(engine)
    queued = await limits.queue_for(engine.store, state, served)
    return {
        "detail": detail,
        "limits": limits.limits_text(state.concurrency),
        "queue": limits.queue_line(queued) if queued is not None else "",
        "row": common.row_of(state, served, engine.store.now(), queued),
        "stop": detail.stop,
        "answer": await _answer_of(engine, detail.stop, state.execution_id),
        "failure": state.status if common.badge_of(state) == "failed" else None,
        "cancelled": state.status if common.badge_of(state) == "cancelled" else None,
        "served": flow is not None,
        "answerable": hints,
        "answer_hint": next((h for h in hints if detail.stop and h.node == detail.stop.node), None),
        "can_operate": await common.can_operate(request),
        "terminal": state.status.terminal,
    }


def _input_forms(detail: Any, typed: dict[str, dict[str, str]], errs: dict[str, Any]) -> list[Any]:
    """Each declared input with its signal form, offered only where a signal could go through: not on an
    ended execution, nor on a stopped one (it takes no input until it is resumed)."""
    open_to_input = not detail.status.terminal and detail.stop is None
    shown = []
    for item in detail.inputs:
        form = None
        if not item.delivered and open_to_input:
            form = forms.signal_form(item.name, item.json_schema, typed.get(item.name), errs.get(item.name))
        shown.append({"input": item, "form": form})
    return shown


async def _inputs_context(
    request: HttpRequest,
    detail: Any,
    typed: dict[str, dict[str, str]] | None = None,
    errs: dict[str, Any] | None = None,
    refused: str = "",
) -> dict[str, Any]:
    return {
        "detail": detail,
        "ended": detail.status.terminal,
        "stopped": detail.stop is not None,
        "refused": refused,
        "served": detail.progress is not None,
        "inputs": _input_forms(detail, typed or {}, errs or {}),
        "can_run": await common.can_run(request),
        "run_permission": RUN_PERMISSION,
    }


async def _fields_context(detail: Any) -> dict[str, Any]:
    engine = await runtime.engine()
    recorded = await engine.store.get_all_fields(detail.execution_id)
    shown = []
    for name in sorted(recorded):
        field = recorded[name]
        text = common.pretty_json(field.value)
        shown.append({"name": name, "tag": field.tag, "text": text, "folded": len(text) > common.FOLD_CHARS})
    return {"detail": detail, "fields": shown}


async def _history_context(execution_id: str, offset: int, kind: str = "", node: str = "") -> dict[str, Any]:
    """A page of rows after seq `offset`; with filters (the timeline's: an event kind, a lane), the next
    page of the events they select."""
    engine = await runtime.engine()
    if kind or node:
        rest = (await engine.executions.history(execution_id, None, offset)).events
        picked = [e for e in rest if timeline.matches(e, kind=kind, node=node)]
        chosen, has_more = picked[:HISTORY_PAGE], len(picked) > HISTORY_PAGE
    else:
        page = await engine.executions.history(execution_id, HISTORY_PAGE, offset)
        chosen, has_more = list(page.events), page.has_more
    events = [
        {
            "seq": e.seq,
            "kind": e.kind.value,
            "lane": timeline.lane_of(e),
            "at": e.timestamp,
            "detail": e.detail,
            "actor": e.data.get("actor"),
        }
        for e in chosen
    ]
    return {
        "execution_id": execution_id,
        "events": events,
        "has_more": has_more,
        "next_offset": (chosen[-1].seq or offset + len(chosen)) if chosen else offset,
        "kind": kind,
        "node": node,
        "filtered": bool(kind or node),
        "offset": offset,
    }


@login_required
@require_GET
async def execution(request: HttpRequest, execution_id: str) -> HttpResponse:
    detail = await _detail(execution_id)
    context = {
        **await _panel_context(request, detail),
        **await _inputs_context(request, detail),
        **await _fields_context(detail),
        **await _history_context(execution_id, 0),
        **diagram_view.context(),
        "nav": "executions",
    }
    return await common.page(request, "flowdeck/console/execution.html", context)


@login_required
@require_GET
async def panel(request: HttpRequest, execution_id: str) -> HttpResponse:
    detail = await _detail(execution_id)
    return await common.fragment(
        request, "flowdeck/console/partials/execution_panel.html", await _panel_context(request, detail)
    )


@login_required
@require_GET
async def inputs(request: HttpRequest, execution_id: str) -> HttpResponse:
    detail = await _detail(execution_id)
    return await common.fragment(
        request, "flowdeck/console/partials/execution_inputs.html", await _inputs_context(request, detail)
    )


@login_required
@require_GET
async def fields(request: HttpRequest, execution_id: str) -> HttpResponse:
    detail = await _detail(execution_id)
    return await common.fragment(
        request, "flowdeck/console/partials/execution_fields.html", await _fields_context(detail)
    )


@login_required
@require_GET
async def history(request: HttpRequest, execution_id: str) -> HttpResponse:
    """History rows from `offset` (the seq of the last row shown: rows after it), only those of event
    kind `kind` and lane `node` when given (the timeline's filters)."""
    offset = refusals.whole_number(request.GET, "offset", 0)
    kind, node = request.GET.get("kind", "").strip(), request.GET.get("node", "").strip()
    context = await _history_context(execution_id, offset, kind, node)
    return await common.fragment(request, "flowdeck/console/partials/history_rows.html", context)


@login_required
@require_GET
async def diagram(request: HttpRequest, execution_id: str, format: str) -> HttpResponse:
    """The execution's version with its progress painted, in `format`; DOT arrives laid out as SVG."""
    if format not in DIAGRAM_FORMATS:
        raise Http404(f"no diagram format {format!r}")
    engine = await runtime.engine()
    # a version nobody here serves is drawn from the graph the store kept for it
    found = await drawn.drawable(engine, await _detail(execution_id))
    flow, painted, detail = found.flow, found.detail.progress, found.detail
    if flow is None:
        return HttpResponse(
            f"No diagram: version {detail.state.hash} of {detail.flow_id} is not served by this server "
            "(the execution is parked; resume it onto the newest version).",
            status=404,
            content_type="text/plain; charset=utf-8",
        )
    if format == "dot":
        text = await sync_to_async(render.render_svg)(flow, painted)
    else:
        text = render.render(flow, format, progress=painted)
    return HttpResponse(text, content_type=_CONTENT_TYPES[format])


# ------------------------------------------------------------------------------------------ verbs


async def _message(request: HttpRequest, level: str, text: str, status: int = 200) -> HttpResponse:
    return await common.fragment(
        request, "flowdeck/console/partials/message.html", {"level": level, "text": text}, status=status
    )


async def _actor(request: HttpRequest) -> str:
    return str((await request.auser()).get_username())


@asynccontextmanager
async def _recording(
    request: HttpRequest, action: str, execution_id: str, **detail: Any
) -> AsyncIterator[Any]:
    """The activity record of a verb on one execution, by the logged-in user."""
    async with activity.recording(
        await _actor(request), "console", action, execution_ids=[execution_id], **detail
    ) as act:
        yield act


@login_required
@require_POST
async def signal(request: HttpRequest, execution_id: str) -> HttpResponse:
    """Deliver the input named by the form's `input_name` from its generated form; a refused value comes
    back with the errors placed next to the fields (400). (The name travels in the body: input names are
    user text, slashes included.) Needs `flowdeck_console.run_executions`."""
    if not await common.can_run(request):
        return await common.forbidden(request, RUN_PERMISSION)
    name = request.POST.get("input_name", "")
    engine = await runtime.engine()
    async with _recording(request, "signal", execution_id, input=name) as act:
        detail = await _detail(execution_id)
        item = next((i for i in detail.inputs if i.name == name), None)
        flow = engine.flow_of(detail.state)
        if item is None or flow is None:
            act.settle("invalid", "input_not_declared", f"input {name!r} is not declared by this version")
            return await _message(request, "error", act.message, 400)
        form = forms.signal_form(name, item.json_schema)
        posted = {f.name: request.POST.get(f.name, "") for f in form.fields}
        value, found = forms.read_signal(form, posted, declared_inputs(flow)[name].type)
        act.detail["size"] = activity.value_size(value)
        if found:
            act.settle("invalid", "invalid_input", "the value does not fit the input's form")
        else:
            try:
                await engine.executions.signal(execution_id, name, value)
            except (errors.FlowSignalError, errors.FlowExecutionTerminal) as error:
                act.refused(error)
                # said above the inputs: the execution may have moved on, and its form gone with it
                context = await _inputs_context(
                    request,
                    await _detail(execution_id),
                    {name: posted},
                    refused=f"{name} was not sent: {error}",
                )
                template = "flowdeck/console/partials/execution_inputs.html"
                return await common.fragment(request, template, context, status=409)
        if found:
            context = await _inputs_context(request, detail, {name: posted}, {name: found})
            return await common.fragment(
                request, "flowdeck/console/partials/execution_inputs.html", context, status=400
            )
    return await common.fragment(
        request,
        "flowdeck/console/partials/execution_inputs.html",
        await _inputs_context(request, await _detail(execution_id)),
    )


@login_required
@require_POST
async def cancel(request: HttpRequest, execution_id: str) -> HttpResponse:
    if not await common.can_operate(request):
        return await common.forbidden(request)
    engine = await runtime.engine()
    reason = request.POST.get("reason", "").strip()
    async with _recording(request, "cancel", execution_id, reason=reason) as act:
        await _detail(execution_id)  # a 404 (or the id rule's 400) for an id that names nothing
        outcome = await engine.executions.cancel(execution_id, reason, actor=act.actor)
        act.cancel_outcome(outcome)
    said = outcomes.cancel_said(execution_id, outcome)
    return await _message(request, said.level, said.text, 200 if said.level == "ok" else 409)


@login_required
@require_POST
async def resume(request: HttpRequest, execution_id: str) -> HttpResponse:
    """Without `go`: the dry-run report (kept nodes, the next node, conflicts) and a Go button. With `go`:
    resume onto the newest version (operators only)."""
    go = request.POST.get("go") == "1"
    if go and not await common.can_operate(request):
        return await common.forbidden(request)
    engine = await runtime.engine()
    async with _recording(request, "resume:go" if go else "resume:dry-run", execution_id) as act:
        detail = await _detail(execution_id)
        versions = {} if go else await parked.versions_context(detail.state)  # its version beside the newest
        try:
            report = await engine.resume(execution_id, go=go, actor=act.actor if go else None)
        except errors.FlowResumeConflict as error:
            act.refused(error)
            return await common.fragment(
                request,
                "flowdeck/console/partials/resume_report.html",
                {"execution_id": execution_id, "report": error.report, "refused": str(error)},
                status=409,
            )
        except errors.FlowError as error:
            act.refused(error)
            return await _message(request, "error", f"Not resumed: {error}", 409)
        act.detail.update(activity.report_detail(report))
    context = {
        "execution_id": execution_id,
        "report": report,
        "resumed": go,
        "can_operate": await common.can_operate(request),
        **versions,
    }
    if go:
        context.update(await resumed.outcome_context(execution_id, None))
    return await common.fragment(request, "flowdeck/console/partials/resume_report.html", context)


@login_required
@require_POST
async def answer(request: HttpRequest, execution_id: str) -> HttpResponse:
    if not await common.can_operate(request):
        return await common.forbidden(request)
    node = request.POST.get("node", "")
    text = request.POST.get("value", "").strip()
    async with _recording(request, "answer", execution_id, node=node, size=len(text.encode())) as act:
        await _detail(execution_id)
        engine = await runtime.engine()
        try:
            value = await answers.value_of(engine, execution_id, node, text)
        except ValueError as error:
            act.refused(error)
            return await _message(request, "error", f"value: {error}", 400)
        except errors.FlowError as error:  # a workflow no process serves: nothing judges the answer
            act.refused(error)
            return await _message(request, "error", f"Not answered: {error}", 409)
        try:
            await engine.answer(execution_id, node, value, actor=act.actor)
        except errors.FlowError as error:
            act.refused(error)
            return await _message(request, "error", f"Not answered: {error}", 409)
    shown = text if len(text) <= 80 else text[:80] + "…"
    what = f"its value {shown}" if text else "it did its work"
    said = f"Answer recorded for {node} ({what}); resume the execution to go on."
    return await _message(request, "ok", said)


@login_required
@require_POST
async def end(request: HttpRequest, execution_id: str) -> HttpResponse:
    if not await common.can_operate(request):
        return await common.forbidden(request)
    reason = request.POST.get("reason", "").strip()
    async with _recording(request, "end", execution_id, reason=reason) as act:
        await _detail(execution_id)
        if not reason:
            act.settle("invalid", "reason_required", "say why the execution ends (the reason is recorded)")
            return await _message(request, "error", act.message, 400)
        engine = await runtime.engine()
        try:
            await engine.end(execution_id, reason, actor=act.actor)
        except errors.FlowError as error:
            act.refused(error)
            return await _message(request, "error", f"Not ended: {error}", 409)
    return await _message(request, "ok", f"Ended {execution_id} without running its undos: {reason}")
