"""One node of an execution, as the diagram's side panel shows it (`GET /executions/<id>/nodes/<key>`).

The fragment names the node by its durable key and says what the record holds about it: kind, description,
tags and state; each attempt (start, end, duration, outcome, error, traceback); the next retry; its timeout
and retry schedule; the recorded value; its compensation; what it waits for (a deadline, or an input with
its JSON schema and, while the execution can still take it, the page's own signal form); a foreach's
items; a subflow's nodes. Everything comes from the contract's reads (`get_execution` through the engine's
describe, `get_all_fields`, `get_history`) and the engine's progress; nothing here writes.

An unknown key, or a version this server does not serve, answers a styled 404 fragment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import drawn, forms, runtime
from flowdeck.console.models import RUN_PERMISSION
from flowdeck.console.views import common, gateway, node_place, node_record
from flowdeck.console.views.signin import login_required
from flowdeck.engine import nodes, places, progress, schema
from flowdeck.engine.graph import show_duration
from flowdeck.store import spi

__all__ = ["node"]

TEMPLATE = "flowdeck/console/partials/node_panel.html"


def _knobs(node: nodes.Node) -> nodes.Knobs | None:
    return getattr(node, "knobs", None)


def _about(node: nodes.Node) -> dict[str, Any]:
    """What the plan declares about the node: description, tags, timeout, retry, compensation handler."""
    knobs = _knobs(node)
    description = getattr(node, "description", "") or (knobs.description if knobs else "")
    if isinstance(node, nodes.Subflow):
        description = description or node.child.meta.description
    tags = getattr(node, "tags", ()) or (knobs.tags if knobs else ())
    return {
        "description": description,
        "tags": tags,
        "timeout": show_duration(knobs.timeout) if knobs and knobs.timeout else "",
        "retry": knobs.retry.describe() if knobs and knobs.retry else "",
        "retry_on": ", ".join(t.__name__ for t in knobs.retry_on) if knobs else "",
        "at_most_once": bool(knobs and knobs.at_most_once),
        "handler": getattr(node, "compensate", None) is not None,
        "sleep_for": show_duration(node.duration) if isinstance(node, nodes.Sleep) else "",
        "location": getattr(node, "location", ""),
    }


def _value(fields: Mapping[str, spi.FieldData], key: str) -> dict[str, Any] | None:
    field = fields.get(key)
    if field is None:
        return None
    text = common.pretty_json(field.value)
    return {"tag": field.tag, "text": text, "folded": len(text) > common.FOLD_CHARS}


def _waits(key: str, detail: Any, known: frozenset[str]) -> list[dict[str, Any]]:
    """The execution's wait rows this node owns: its input, its deadline, a back-off, a loop's pause."""
    found = []
    for wait in common.waits_of(detail.state):
        if schema.owner_of(wait.path, known) != key:
            continue
        if wait.input_name is not None:
            found.append({"path": wait.path, "input": wait.input_name})
        else:
            why = "retry back-off" if "#retry" in wait.path else "deadline"
            found.append({"path": wait.path, "at": wait.at, "why": why})
    return found


def _input(key: str, detail: Any, can_run: bool) -> dict[str, Any] | None:
    """A declared input's schema, and the signal form while the execution can still take it."""
    item = next((i for i in detail.inputs if i.name == key), None)
    if item is None:
        return None
    form = None
    if not item.delivered and not detail.status.terminal:
        form = forms.signal_form(item.name, item.json_schema)
    return {
        "item": item,
        "schema": common.pretty_json(json.dumps(item.json_schema, ensure_ascii=False)),
        "form": form,
        "can_run": can_run,
    }


def _children(key: str, names: Sequence[str], detail: Any) -> list[dict[str, Any]]:
    """A subflow's own nodes (one level down), each with its state."""
    found = []
    for name in names:
        rest = name.removeprefix(f"{key}~")
        if rest == name or "~" in rest:
            continue
        entry = detail.progress.by_name(name) if detail.progress is not None else None
        found.append({"key": name, "name": rest, "status": entry.status.value if entry else "pending"})
    return found


def _took(d: timedelta) -> str:
    """An attempt's duration as a person reads it: `22 ms`, `1.4s`, `2m05s` (show_duration past a minute)."""
    seconds = d.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    return show_duration(timedelta(seconds=round(seconds)))


def _attempt_rows(attempts: Sequence[node_record.Attempt]) -> list[dict[str, Any]]:
    return [
        {"a": a, "duration": _took(a.duration) if a.duration is not None else ""}
        for a in reversed(attempts)  # the latest first: what the operator came for
    ]


async def _context(
    request: HttpRequest, detail: Any, selection: places.Selection, flow: Any
) -> dict[str, Any]:
    engine = await runtime.engine()
    eid, key = detail.execution_id, selection.path
    fields = await engine.store.get_all_fields(eid)
    history = (await engine.store.get_history(eid)).events
    names = schema.durable_names(flow)
    known = frozenset(names)
    plan = names[key]
    where = node_place.placed(detail.progress, selection, places.branch_words(flow))
    entry = where.entry
    attempts = where.own(node_record.attempts_of(key, history, detail.status))
    about = _about(plan)
    is_foreach = isinstance(plan, nodes.ForEach)
    can_run = await common.can_run(request)
    return {
        "detail": detail,
        "key": key,
        "selected": places.key_of(key, entry.place) if entry is not None and entry.shared else key,
        "where": where,
        "kind": progress.node_type(plan),
        "about": about,
        "state": entry,
        "status": entry.status.value if entry else "pending",
        "attempts": _attempt_rows(attempts),
        "next_retry": node_record.next_retry(key, detail.waits, history) if where.recorded else None,
        "value": _value(fields, key) if where.holds_completion else None,
        "compensation": node_record.compensation_of(key, about["handler"], history, fields)
        if where.holds_completion
        else None,
        "waits": _waits(key, detail, known) if where.recorded else [],
        "input": _input(key, detail, can_run) if isinstance(plan, nodes.Input) else None,
        "items": node_record.items_of(key, fields, history, detail.waits, detail.status)
        if is_foreach
        else None,
        "children": _children(key, list(names), detail) if isinstance(plan, nodes.Subflow) else None,
        "parent": key.rsplit("~", 1)[0] if "~" in key and key.rsplit("~", 1)[0] in known else "",
        "run_permission": RUN_PERMISSION,
    }


async def _missing(request: HttpRequest, key: str, text: str) -> HttpResponse:
    return await common.fragment(request, TEMPLATE, {"missing": text, "key": key}, status=404)


@login_required
@require_GET
async def node(request: HttpRequest, execution_id: str, key: str) -> HttpResponse:
    """The side panel's fragment for the node `key` names in the execution: a durable path, one place of
    a path several places carry (`decision@n14`), or a gateway (`@n6`)."""
    engine = await runtime.engine()
    # a parked execution's nodes are its stored version's: the panel works there too
    found = await drawn.drawable(engine, await common.described(engine, execution_id))
    flow, detail = found.flow, found.detail
    if flow is None:
        return await _missing(request, key, f"This execution's nodes are unknown here: {found.problem}.")
    selection = places.select(flow, key)
    if selection is None:
        return await _missing(request, key, "This execution's flow has no node with this key.")
    if not selection.path:
        return await gateway.panel(request, detail, flow, selection.place)
    return await common.fragment(request, TEMPLATE, await _context(request, detail, selection, flow))
