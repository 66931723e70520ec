"""What changed between two versions of a flow, node by node: for an operator deciding whether executions
of an old version can move onto the new one.

Nodes are paired by durable key (the path their record lives under; a dispatch arm by its dispatch's path
and its name), as resume pairs them. A pair is changed when its shape differs: the node kind, the value
type, a sleep's duration, a loop's schedule, a foreach's concurrency, or the parallels around it. Structural
nodes of the drawing (forks, joins) have no key and are never marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flowdeck.engine import graph_document, nodes, traversal
from flowdeck.engine.flow import Flow
from flowdeck.engine.graph import FlowGraph, GraphNode

__all__ = ["Change", "Side", "VersionDiff", "arm_key", "diff", "key_of", "marks"]

Side = Literal["old", "new"]


@dataclass(frozen=True)
class Change:
    """`what` is added (only in the new version), removed (only in the old) or changed; `before` and
    `after` describe the shape on each side ("" where the node is absent)."""

    key: str
    kind: str
    what: str
    before: str = ""
    after: str = ""


@dataclass(frozen=True)
class VersionDiff:
    changes: tuple[Change, ...] = ()

    @property
    def same(self) -> bool:
        return not self.changes

    def count(self, what: str) -> int:
        return sum(1 for c in self.changes if c.what == what)

    def marked(self, side: Side) -> dict[str, str]:
        """Durable key → added, removed or changed, for the keys that exist on `side`."""
        absent = "added" if side == "old" else "removed"
        return {c.key: c.what for c in self.changes if c.what != absent}


def arm_key(path: str, arm: str) -> str:
    return f"{path}#chosen={arm}"


def _shapes(flow: Flow) -> dict[str, tuple[str, str]]:
    """Durable key → (kind, shape text) for every keyed node of `flow`, in plan order."""
    found: dict[str, tuple[str, str]] = {}
    for place in traversal.walk(flow):
        node = place.node
        kind = traversal.kind(node)
        around = "".join(f"{k} " for _, k, _ in place.branches)
        found.setdefault(place.path, (kind, around + _shape(node)))
        if isinstance(node, nodes.Dispatch):
            arms = [*node.branches, *([node.default] if node.default is not None else [])]
            for arm in arms:
                shape = "otherwise" if arm.condition is None else "when"
                found.setdefault(arm_key(place.path, arm.name), ("branch", around + shape))
    return found


def _shape(node: nodes.Node) -> str:
    kind = traversal.kind(node)
    parts = [kind]
    if hasattr(node, "type"):
        parts.append(graph_document.type_tag(node.type))
    if isinstance(node, nodes.Sleep):
        parts.append(f"{node.duration.total_seconds():g}s")
    if isinstance(node, nodes.LoopOn):
        parts.append(node.schedule.describe())
    if isinstance(node, nodes.ForEach):
        parts.append(f"concurrency {node.concurrency if node.concurrency is not None else 'unbounded'}")
    return " ".join(parts)


def diff(old: Flow, new: Flow) -> VersionDiff:
    """Each node added, removed or changed from `old` to `new` (removed and changed in the old version's
    order, then added in the new one's)."""
    before, after = _shapes(old), _shapes(new)
    changes = []
    for key, (kind, shape) in before.items():
        if key not in after:
            changes.append(Change(key, kind, "removed", before=shape))
        elif after[key][1] != shape:
            changes.append(Change(key, after[key][0], "changed", before=shape, after=after[key][1]))
    changes += [
        Change(key, kind, "added", after=shape) for key, (kind, shape) in after.items() if key not in before
    ]
    return VersionDiff(tuple(changes))


def key_of(node: GraphNode) -> str:
    """The durable key a drawn node stands for ("" for forks and joins)."""
    if not node.path:
        return ""
    return arm_key(node.path, node.name) if node.kind == "branch" else node.path


def marks(graph: FlowGraph, found: VersionDiff, side: Side) -> dict[str, str]:
    """Drawn node id → added, removed or changed, for `graph` drawn from the `side` version."""
    keyed = found.marked(side)
    return {n.id: keyed[key_of(n)] for n in graph.nodes if key_of(n) in keyed}
