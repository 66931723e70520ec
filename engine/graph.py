"""FlowGraph: a flow folded into nodes and edges once, so every diagram format draws the same picture.

Ids `n1, n2, …` come from one counter threaded through the fold; names are user text and only ever
appear in labels. Unlike spec §4.1 every node kind is drawn: dispatch arms are nodes between the dispatch
and its join, loops carry their back edge, and a subflow is expanded: its child's nodes sit inside it
(`parent` is the subflow node's id) and the subflow's `scope` says where the child's chain starts and ends.

With a `Progress`, each named node takes the status of its place (its own id: engine/progress.py keys
progress by these ids, so the three arms of a race sharing a durable name each keep their own state); a
dispatch arm takes the dispatch's status when it was the chosen one; forks and joins are completed once
the work behind them is, except an undecided race's fork (its liveliest arm: the race goes on), and a
gateway whose arms all lost is lost (it sits in a race's losing arm).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from flowdeck.engine import nodes, traversal
from flowdeck.engine.node_status import NodeStatus

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow
    from flowdeck.engine.progress import NodeProgress, Progress

__all__ = ["FlowGraph", "GraphEdge", "GraphNode", "Scope", "build_graph", "show_duration"]

# Structural kinds: drawn, never recorded.
FORKS = frozenset({"fork", "race-fork"})
JOINS = frozenset({"join", "race-join", "join-dispatch"})


@dataclass(frozen=True)
class GraphNode:
    """One drawn node. `kind` is the node type (input, output, step, sleep, dispatch, branch,
    join-dispatch, loop, loop_on, foreach, subflow, fork, join, race-fork, race-join); `path` its durable
    path ("" for structural nodes); `parent` the id of the subflow it sits in ("" at the top). Painted, it
    carries its place's status and detail, and a foreach's item counts or a loop's iterations."""

    id: str
    kind: str
    name: str
    path: str = ""
    parent: str = ""
    tag: str = ""
    duration: str = ""
    concurrency: int | None = None
    schedule: str = ""
    status: str = ""
    detail: str = ""
    until: str = ""
    done: int | None = None
    total: int | None = None
    items_running: int | None = None
    items_failed: int | None = None
    iterations: int | None = None


@dataclass(frozen=True)
class GraphEdge:
    """`style` is "flow" for the plan's order and "back" for a loop's return to itself."""

    id: str
    source: str
    target: str
    label: str = ""
    style: str = "flow"


@dataclass(frozen=True)
class Scope:
    """Where a chain starts and ends; both None for an empty chain."""

    start: str | None
    end: str | None


@dataclass(frozen=True)
class FlowGraph:
    name: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    scopes: dict[str, Scope] = field(default_factory=dict)  # "" is the top level; else a subflow's id

    def children(self, parent: str = "") -> tuple[GraphNode, ...]:
        return tuple(n for n in self.nodes if n.parent == parent)

    def node(self, node_id: str) -> GraphNode:
        return next(n for n in self.nodes if n.id == node_id)

    def edges_within(self, parent: str = "") -> tuple[GraphEdge, ...]:
        """Edges whose source lies directly in `parent` (both ends always share a scope)."""
        inside = {n.id for n in self.children(parent)}
        return tuple(e for e in self.edges if e.source in inside)

    def descendants(self, parent: str) -> Iterator[GraphNode]:
        for child in self.children(parent):
            yield child
            yield from self.descendants(child.id)


def show_duration(d: timedelta) -> str:
    """`90s` → "1m30s", `timedelta(days=2)` → "2d": compact and exact to the second (and below)."""
    total = d.total_seconds()
    if total == 0:
        return "0s"
    sign, total = ("-", -total) if total < 0 else ("", total)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if total >= size:
            count, total = divmod(total, size)
            parts.append(f"{int(count)}{unit}")
    if total:
        parts.append(f"{total:g}s")
    return sign + "".join(parts)


def type_name(t: Any) -> str:
    if t is None:
        return ""
    return getattr(t, "__name__", None) or repr(t)


# ------------------------------------------------------------------------------------------------ fold


class _Fold(traversal.Visitor[Scope]):
    """Folds each node into the nodes and edges that draw it (`visit(node, prefix, parent)` answers
    where its piece starts and ends)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.nodes: list[GraphNode] = []
        self.edges: list[GraphEdge] = []
        self.scopes: dict[str, Scope] = {}

    def next_id(self) -> str:
        self.count += 1
        return f"n{self.count}"

    def add(self, kind: str, name: str, parent: str, **attrs: Any) -> str:
        node_id = self.next_id()
        self.nodes.append(GraphNode(node_id, kind, name, parent=parent, **attrs))
        return node_id

    def edge(self, source: str, target: str, label: str = "", style: str = "flow") -> None:
        self.edges.append(GraphEdge(self.next_id(), source, target, label, style))

    def chain(self, flow: Flow, prefix: str, parent: str) -> Scope:
        start: str | None = None
        end: str | None = None
        for node in flow.nodes:
            piece = self.visit(node, prefix, parent)
            if piece.start is None:
                continue
            if end is not None:
                self.edge(end, piece.start)
            start = start or piece.start
            end = piece.end
        return Scope(start, end)

    def one(self, node: nodes.Node, prefix: str, parent: str, **attrs: Any) -> str:
        """A named node drawn as one box (its id)."""
        path = traversal.qualify(prefix, node.name)
        return self.add(traversal.kind(node), node.name, parent, path=path, **attrs)

    def visit_input(self, node: nodes.Input, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, tag=type_name(node.type))
        return Scope(one, one)

    def visit_output(self, node: nodes.Output, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, tag=type_name(node.type))
        return Scope(one, one)

    def visit_step(self, node: nodes.Step, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent)
        return Scope(one, one)

    def visit_sleep(self, node: nodes.Sleep, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, duration=show_duration(node.duration))
        return Scope(one, one)

    def visit_foreach(self, node: nodes.ForEach, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, tag=type_name(node.type), concurrency=node.concurrency)
        return Scope(one, one)

    def visit_loop(self, node: nodes.Loop, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, tag=type_name(node.type))
        self.edge(one, one, "again", style="back")
        return Scope(one, one)

    def visit_loop_on(self, node: nodes.LoopOn, prefix: str, parent: str) -> Scope:
        schedule = node.schedule.describe()
        one = self.one(node, prefix, parent, tag=type_name(node.type), schedule=schedule)
        self.edge(one, one, f"every {schedule}", style="back")
        return Scope(one, one)

    def visit_subflow(self, node: nodes.Subflow, prefix: str, parent: str) -> Scope:
        one = self.one(node, prefix, parent, tag=node.child.name)
        self.scopes[one] = self.chain(node.child, traversal.qualify(prefix, node.name), one)
        return Scope(one, one)

    def visit_dispatch(self, node: nodes.Dispatch, prefix: str, parent: str) -> Scope:
        path = traversal.qualify(prefix, node.name)
        head = self.add("dispatch", node.name, parent, path=path, tag=type_name(node.type))
        arms = [*node.branches, *([node.default] if node.default is not None else [])]
        ids = [self.add("branch", arm.name, parent, path=path) for arm in arms]
        join = self.add("join-dispatch", "", parent)
        for arm, arm_id in zip(arms, ids, strict=True):
            self.edge(head, arm_id, "otherwise" if arm.condition is None else "when")
            self.edge(arm_id, join)
        if not arms:
            self.edge(head, join)
        return Scope(head, join)

    def visit_parallel(self, node: nodes.Parallel, prefix: str, parent: str) -> Scope:
        race = node.kind == "race"
        fork = self.add("race-fork" if race else "fork", node.kind, parent)
        join = self.add("race-join" if race else "join", "", parent)
        for branch in node.branches:
            scope = self.chain(branch, prefix, parent)
            if scope.start is None or scope.end is None:
                self.edge(fork, join)
            else:
                self.edge(fork, scope.start)
                self.edge(scope.end, join)
        return Scope(fork, join)


def build_graph(flow: Flow, progress: Progress | None = None) -> FlowGraph:
    fold = _Fold(flow.name)
    fold.scopes[""] = fold.chain(flow, "", "")
    graph = FlowGraph(flow.name, tuple(fold.nodes), tuple(fold.edges), fold.scopes)
    return graph if progress is None else _painted(graph, progress)


# ----------------------------------------------------------------------------------------------- paint


_COMPLETE = frozenset({NodeStatus.COMPLETED.value, NodeStatus.WON.value})


def _painted(graph: FlowGraph, progress: Progress) -> FlowGraph:
    painted: dict[str, GraphNode] = {}
    incoming: dict[str, list[str]] = {}
    outgoing: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.style == "flow":
            incoming.setdefault(edge.target, []).append(edge.source)
            outgoing.setdefault(edge.source, []).append(edge.target)
    for node in graph.nodes:
        if node.kind == "branch":
            heads = incoming.get(node.id, [])
            painted[node.id] = _arm(node, progress.by_place(heads[0]) if heads else None)
        elif node.path:
            painted[node.id] = _entry(node, progress.by_place(node.id) or progress.by_name(node.path))
        else:
            painted[node.id] = replace(node, status=NodeStatus.PENDING.value)
    # Structural nodes follow the work around them, in fold order so nested forks see their inner joins.
    for node in reversed(graph.nodes):
        if node.kind in JOINS:
            before = [painted[i].status for i in incoming.get(node.id, [])]
            painted[node.id] = replace(node, status=_join_status(node.kind, before))
    # `visit_parallel` adds a fork's join right after it
    join_of = {n.id: graph.nodes[i + 1].id for i, n in enumerate(graph.nodes) if n.kind in FORKS}
    for node in reversed(graph.nodes):
        if node.kind in FORKS:
            after = [painted[i].status for i in outgoing.get(node.id, [])]
            joined = painted[join_of[node.id]].status
            painted[node.id] = replace(node, status=_fork_status(node.kind, after, joined))
    return replace(graph, nodes=tuple(painted[n.id] for n in graph.nodes))


_LOST = NodeStatus.LOST.value
# What an undecided race's fork shows: its liveliest arm, the one an operator looks at first.
_LIVELIEST = tuple(
    s.value
    for s in (
        NodeStatus.STOPPED,
        NodeStatus.ANSWERED,
        NodeStatus.FAILED,
        NodeStatus.RUNNING,
        NodeStatus.WAITING,
        NodeStatus.SLEEPING,
        NodeStatus.INTERRUPTED,
    )
)


def _join_status(kind: str, before: list[str]) -> str:
    """A join is lost when every arm reaching it lost (it sits in a race's losing arm); a race's join and
    a dispatch's are completed once one arm arrived, a parallel join once all did."""
    if before and all(s == _LOST for s in before):
        return _LOST
    if kind in ("race-join", "join-dispatch"):
        done = any(s in _COMPLETE for s in before)
    else:
        done = bool(before) and all(s in _COMPLETE | {NodeStatus.COMPENSATED.value} for s in before)
    return NodeStatus.COMPLETED.value if done else NodeStatus.PENDING.value


def _fork_status(kind: str, after: list[str], joined: str) -> str:
    """A fork is lost when every arm leaving it lost, pending until an arm started. A parallel fork that
    started is completed; a race's only once decided (its join completed): undecided, it shows its
    liveliest arm (stopped, answered, failed, running, waiting, sleeping, interrupted), never completed."""
    if after and all(s == _LOST for s in after):
        return _LOST
    if not any(s not in (NodeStatus.PENDING.value, _LOST) for s in after):  # lost unstarted arms ran nothing
        return NodeStatus.PENDING.value
    if kind != "race-fork" or joined == NodeStatus.COMPLETED.value:
        return NodeStatus.COMPLETED.value
    return next((s for s in _LIVELIEST if s in after), NodeStatus.PENDING.value)


def _entry(node: GraphNode, entry: NodeProgress | None) -> GraphNode:
    if entry is None:
        return replace(node, status=NodeStatus.PENDING.value)
    return replace(
        node,
        status=entry.status.value,
        detail=entry.detail,
        until=entry.until.isoformat() if entry.until is not None else "",
        done=entry.done,
        total=entry.total,
        items_running=entry.items_running,
        items_failed=entry.items_failed,
        iterations=entry.iterations,
    )


def _arm(node: GraphNode, dispatch: NodeProgress | None) -> GraphNode:
    """An arm is as far along as its dispatch once it is the chosen one; the others stay pending."""
    if dispatch is not None and dispatch.detail == node.name:
        return replace(node, status=dispatch.status.value)
    return replace(node, status=NodeStatus.PENDING.value)
