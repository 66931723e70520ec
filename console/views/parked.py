"""The parked page: for each version nobody serves, its diagram beside the newest version's with nodes
added, removed and changed marked, and its executions paged; per execution, on demand (one htmx request
per row, the first row opened with the page), its progress painted on its own version and its resume
preview. The diagrams of an old version come from the graph document the store kept at registration
(engine/graph_document.py): no process needs its code.

`versions_context` serves the execution page's resume report too: a stopped execution about to move onto
a newer version shows the same pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from flowdeck.console import refusals, runtime, states
from flowdeck.console.discovery import flow_versions
from flowdeck.console.drawn import skeleton as _skeleton
from flowdeck.console.drawn import stored_drawing
from flowdeck.console.views import common, diagram
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, focus, progress, render, schema, version_diff
from flowdeck.engine.flow import Flow
from flowdeck.engine.graph import build_graph
from flowdeck.store import spi

__all__ = ["parked", "parked_execution", "parked_rows", "stored_drawing", "versions_context"]

PAGE = 10  # executions listed per version before "more"


@dataclass(frozen=True)
class Drawn:
    """One version as the page shows it: its stored info, its skeleton (None without a stored graph),
    and its SVG with the diff marks (empty without a graph)."""

    info: spi.WorkflowInfo | None
    flow: Flow | None
    svg: str = ""
    problem: str = ""

    @property
    def nodes(self) -> tuple[spi.NodeInfo, ...]:
        return self.info.nodes if self.info is not None else ()


@dataclass(frozen=True)
class Pair:
    old: Drawn
    new: Drawn
    diff: version_diff.VersionDiff | None
    old_hash: str = ""
    new_hash: str = ""
    changes: list[version_diff.Change] = field(default_factory=list)

    @property
    def sides(self) -> list[dict[str, Any]]:
        """The two figures in page order: the version executions are parked on, then the newest."""
        return [
            {
                "role": "old",
                "title": "Parked version",
                "hash": self.old_hash,
                "drawn": self.old,
                "note": "removed and changed nodes marked",
            },
            {
                "role": "new",
                "title": "Newest version",
                "hash": self.new_hash,
                "drawn": self.new,
                "note": "added and changed nodes marked",
            },
        ]

    def _count(self, what: str) -> int:
        return self.diff.count(what) if self.diff is not None else 0

    @property
    def added(self) -> int:
        return self._count("added")

    @property
    def removed(self) -> int:
        return self._count("removed")

    @property
    def changed(self) -> int:
        return self._count("changed")


# ---------------------------------------------------------------------------------------- drawing

_NODE_GROUP = re.compile(r'(<g id="[^"]*" class=")node(">\s*<title>)(n\d+)(</title>)')


def _marked(svg: str, marks: dict[str, str]) -> str:
    """Graphviz's SVG with each marked node's group classed `diff-<mark>` (node ids are ours, n1…)."""

    def one(found: re.Match[str]) -> str:
        mark = marks.get(found.group(3))
        extra = f" diff-{mark}" if mark else ""
        return f"{found.group(1)}node{extra}{found.group(2)}{found.group(3)}{found.group(4)}"

    return _NODE_GROUP.sub(one, svg)


def _inline(svg: str) -> str:
    """The `<svg>` element alone, for placing inside the page (no XML prolog or doctype)."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else ""


async def _svg(
    flow: Flow, painted: progress.Progress | None = None, marks: dict[str, str] | None = None
) -> str:
    drawn = await sync_to_async(render.render_svg)(flow, painted)
    return _inline(_marked(drawn, marks or {}))


async def _drawn(
    info: spi.WorkflowInfo | None,
    flow: Flow | None,
    problem: str,
    found: version_diff.VersionDiff | None,
    side: version_diff.Side,
) -> Drawn:
    if flow is None:
        return Drawn(info, None, problem=problem)
    marks = version_diff.marks(build_graph(flow), found, side) if found is not None else {}
    return Drawn(info, flow, await _svg(flow, marks=marks))


async def _pair(store: spi.FlowStore, workflow_id: str, digest: str) -> Pair:
    """Version `digest` beside the newest registered one, each drawn with the other's differences."""
    old_info = await store.get_workflow(workflow_id, digest)
    new_info = await store.get_workflow(workflow_id)
    old_flow, old_problem = _skeleton(old_info)
    new_flow, new_problem = _skeleton(new_info)
    found = version_diff.diff(old_flow, new_flow) if old_flow and new_flow else None
    old = await _drawn(old_info, old_flow, old_problem, found, "old")
    new = await _drawn(new_info, new_flow, new_problem, found, "new")
    new_hash = new_info.structural_hash if new_info is not None else ""
    return Pair(old, new, found, digest, new_hash, list(found.changes) if found else [])


async def versions_context(state: spi.ExecutionState) -> dict[str, Any]:
    """For a resume report: the execution's version beside the newest, when they differ ({} else)."""
    store = (await runtime.engine()).store
    newest = await store.get_workflow(state.flow_id)
    if newest is None or newest.structural_hash == state.hash:
        return {}
    return {
        "pair": await _pair(store, state.flow_id, state.hash),
        "from_hash": state.hash,
        "to_hash": newest.structural_hash,
    }


# ------------------------------------------------------------------------------------------ groups


def _served(workflow_id: str) -> frozenset[str]:
    return frozenset(schema.structural_hash(f) for f in flow_versions().get(workflow_id, ()))


def served_hashes(workflows: Iterable[spi.WorkflowInfo]) -> frozenset[str]:
    """The version hashes some process serves (`flowdeck.console.states.served_hashes`, the one rule)."""
    return states.served_hashes(workflows)


async def _page_of(store: spi.FlowStore, workflow_id: str, digest: str, offset: int) -> spi.ExecutionPage:
    """One page of the unended executions of version `digest`: "orphaned from every other known version"
    is exactly "of this version", and the store pages it."""
    others = frozenset(v.hash for v in await store.count_by_version(workflow_id)) - {digest}
    return await store.list_executions(workflow_id, spi.ExecutionFilter.Orphaned(others), PAGE, offset)


async def _groups() -> list[dict[str, Any]]:
    engine = await runtime.engine()
    store = engine.store
    groups = []
    for info in await engine.workflows.list():
        served = _served(info.id) or {info.structural_hash}
        for version in await store.count_by_version(info.id):
            if version.unended == 0 or version.hash in served:
                continue
            page = await _page_of(store, info.id, version.hash, 0)
            groups.append(
                {
                    "workflow_id": info.id,
                    "hash": version.hash,
                    "newest": info.structural_hash,
                    "registered": version.registered,
                    "pair": await _pair(store, info.id, version.hash),
                    **_rows_context(info.id, version.hash, page, 0),
                }
            )
    return groups


def _rows_context(workflow_id: str, digest: str, page: spi.ExecutionPage, offset: int) -> dict[str, Any]:
    rows = [common.row_of(s, frozenset()) for s in page.items]  # every one of them is parked
    following = offset + len(rows)
    return {
        "workflow_id": workflow_id,
        "hash": digest,
        "rows": rows,
        "total": page.total,
        "offset": offset,
        "more": following if following < page.total else None,
    }


@login_required
@require_GET
async def parked(request: HttpRequest) -> HttpResponse:
    context = {
        "groups": await _groups(),
        "nav": "parked",
        "can_operate": await common.can_operate(request),
        "page_size": PAGE,
    }
    return await common.page(request, "flowdeck/console/parked.html", context)


@login_required
@require_GET
async def parked_rows(request: HttpRequest, workflow_id: str, digest: str) -> HttpResponse:
    """The next page of a version's parked executions (table rows, and the "more" row after them)."""
    refusals.check_filter("workflow id", workflow_id)
    offset = refusals.whole_number(request.GET, "offset", 0)
    store = (await runtime.engine()).store
    page = await _page_of(store, workflow_id, digest, offset)
    return await common.fragment(
        request,
        "flowdeck/console/partials/parked_rows.html",
        _rows_context(workflow_id, digest, page, offset),
    )


# --------------------------------------------------------------------------------------- one execution


async def _painted(store: spi.FlowStore, state: spi.ExecutionState) -> tuple[str, str, str]:
    """The execution's progress painted on its own version's stored graph (SVG) and the graph id of the
    node that matters most on it (where its viewer opens), or why it cannot be drawn."""
    flow, painted, problem = await stored_drawing(
        store, state, await states.served_by(await runtime.engine())
    )
    if flow is None:
        return "", problem, ""
    return await _svg(flow, painted), "", focus.matters_most(build_graph(flow, painted).nodes)


@login_required
@require_GET
async def parked_execution(request: HttpRequest, execution_id: str) -> HttpResponse:
    """One parked (or stopped) execution: its progress on its own version, and its resume preview (the
    dry run on the newest version: what it keeps, what would run next, any F0101/F0102)."""
    engine = await runtime.engine()
    state = await engine.store.get_execution(execution_id)
    if state is None:
        raise refusals.unknown("execution id", execution_id, f"no execution {execution_id!r}")
    if state.status.terminal:
        raise Http404(f"execution {execution_id!r} has ended: there is nothing to resume")
    svg, problem, focused = await _painted(engine.store, state)
    report, refused = None, ""
    try:
        report = await engine.resume(execution_id, go=False)
    except errors.FlowError as error:
        refused = str(error)
    context = {
        "state": state,
        "row": common.row_of(state),
        "svg": svg,
        "focus": focused,
        "palette": diagram.context()["palette"],  # the legend under the painted progress
        "problem": problem,
        "parked": engine.flow_of(state) is None,
        "report": report,
        "refused": refused,
        "can_operate": await common.can_operate(request),
    }
    return await common.fragment(request, "flowdeck/console/partials/parked_execution.html", context)
