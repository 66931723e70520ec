"""A workflow's numbers per node: how many executions are at each node now (by state), how often each
failed lately (by failure kind) and how long each took (p50/p95 of its recent completions), read from the
store (`FlowStore.nodes_now`, `FlowStore.node_stats`) and folded onto the flow's durable paths; and the
fragment one node's side panel shows (`GET /workflows/<id>/nodes/<durable key>`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import refusals, runtime
from flowdeck.console.discovery import registered_flows
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, progress, schema, traversal
from flowdeck.engine.graph import show_duration
from flowdeck.store import node_stats

__all__ = ["NodeNumbers", "numbers", "took", "workflow_node"]

RECENT = node_stats.RECENT  # the executions the durations and failures are read over


def took(d: timedelta | None) -> str:
    """A node's duration as the page shows it: "840 ms" below a second, "2.4s", "3m12s" above."""
    if d is None:
        return "–"
    if d < timedelta(seconds=1):
        return f"{d.total_seconds() * 1000:.0f} ms"
    if d < timedelta(minutes=1):
        return f"{d.total_seconds():.1f}s"
    return show_duration(timedelta(seconds=round(d.total_seconds())))


@dataclass
class NodeNumbers:
    """One node's numbers: executions at it now per state, its recent completions and their duration
    percentiles, and the executions in which it failed lately, per failure kind ("" untyped). A node that
    sits only in a race's arms loses the race when it fails, by design: those are `lost`, never failures
    (a race that every arm lost fails the execution, which says so itself)."""

    path: str
    now: dict[str, int] = field(default_factory=dict)
    completions: int = 0
    p50: timedelta | None = None
    p95: timedelta | None = None
    failures: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def to_json(self) -> dict[str, Any]:
        def ms(d: timedelta | None) -> float | None:
            return None if d is None else round(d.total_seconds() * 1000, 1)

        return {
            "now": self.now,
            "completions": self.completions,
            "p50_ms": ms(self.p50),
            "p95_ms": ms(self.p95),
            "p50": took(self.p50),
            "p95": took(self.p95),
            "failures": self.failures,
            "lost": self.lost,
        }


def _known(workflow_id: str) -> dict[str, Any]:
    """The flow's durable paths with their nodes (subflow children included), when this process has it."""
    flow = registered_flows().get(workflow_id)
    return dict(schema.durable_names(flow)) if flow is not None else {}


def _raced(workflow_id: str) -> frozenset[str]:
    """The durable paths every place of which sits in a race's arm: their failures lose a race."""
    flow = registered_flows().get(workflow_id)
    if flow is None:
        return frozenset()
    places: dict[str, list[bool]] = defaultdict(list)
    for place in traversal.walk(flow):
        places[place.path].append(any(kind == "race" for _, kind, _ in place.branches))
    return frozenset(path for path, raced in places.items() if all(raced))


def _owner(path: str, known: Collection[str]) -> str:
    """The node a store path belongs to (`items~3` → `items`), or the path itself when no node owns it."""
    return (schema.owner_of(path, known) if known else None) or path


async def numbers(workflow_id: str) -> dict[str, NodeNumbers]:
    """Every node with a number to show, by durable path."""
    store = (await runtime.engine()).store
    known = _known(workflow_id)
    found: dict[str, NodeNumbers] = {}

    def at(path: str) -> NodeNumbers:
        owner = _owner(path, known)
        return found.setdefault(owner, NodeNumbers(owner))

    for count in await store.nodes_now(workflow_id):
        entry = at(count.path)
        entry.now[count.state] = entry.now.get(count.state, 0) + count.executions
    # A foreach's items fold into the foreach: their failures add up; the durations stay the node's own,
    # or, when it has none of its own, its items'.
    failures: dict[str, dict[str, int]] = defaultdict(dict)
    for stats in await store.node_stats(workflow_id, RECENT):
        entry = at(stats.path)
        for kind, n in stats.failures:
            failures[entry.path][kind] = failures[entry.path].get(kind, 0) + n
        if stats.path == entry.path or not entry.completions:
            entry.completions, entry.p50, entry.p95 = stats.completions, stats.p50, stats.p95
    raced = _raced(workflow_id)
    for path, by_kind in failures.items():
        if path in raced:
            found[path].lost = dict(sorted(by_kind.items()))
        else:
            found[path].failures = dict(sorted(by_kind.items()))
    return dict(sorted(found.items()))


@login_required
@require_GET
async def workflow_node(request: HttpRequest, workflow_id: str, key: str) -> HttpResponse:
    """One node of a workflow, for its side panel: key, kind, description, tags, its executions now,
    failures by kind and duration p50/p95."""
    engine = await runtime.engine()
    try:
        info = await engine.workflows.describe(workflow_id)
    except errors.FlowNotRegistered:
        raise refusals.unknown("workflow id", workflow_id, f"no workflow {workflow_id!r}") from None
    refusals.check_text("node key", key)
    known = _known(workflow_id)
    stored = {n.name: n for n in info.nodes}
    if key not in known and key not in stored:
        raise Http404(f"workflow {workflow_id!r} has no node {key!r}")
    node = known.get(key)
    if node is not None:
        kind, description = progress.node_type(node), getattr(node, "description", "")
        tags = tuple(getattr(node, "tags", ()))
    else:
        kind, description, tags = stored[key].node_type, stored[key].meta.description, stored[key].meta.tags
    entry = (await numbers(workflow_id)).get(key) or NodeNumbers(key)
    context = {
        "workflow_id": workflow_id,
        "key": key,
        "kind": kind,
        "description": description,
        "tags": tags,
        "node": entry,
        "p50": took(entry.p50),
        "p95": took(entry.p95),
        "recent": RECENT,
    }
    return await common.fragment(request, "flowdeck/console/partials/workflow_node.html", context)


@login_required
@require_GET
async def no_node(request: HttpRequest, workflow_id: str) -> HttpResponse:
    """The prefix the panel appends a key to, asked for with none: nothing to show."""
    raise refusals.Refused("node key", "is missing: ask /workflows/<id>/nodes/<durable key>")
