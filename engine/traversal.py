"""One traversal of a flow's nodes, shared by everything that walks a plan.

Two shapes, because the walkers need two: `walk` lists every named node with its durable path, in plan
order (a parallel's branches one after the other, a subflow's children right after the subflow), for the
readers that only collect (schema, progress, the record); a `Visitor` dispatches one node to the method for
its kind, for the folds that build something per kind (the interpreter's walker, the hash, the diagrams,
lint). Both read their kinds from `KINDS`, the one table of node kinds.

The visitor's dispatch is one dict lookup per node (the table is built once per visitor class), so the
interpreter's walk pays no more for it than for a `match`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from flowdeck.engine import nodes
from flowdeck.engine.nodes import Node

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["KINDS", "Place", "Visitor", "kind", "qualify", "walk"]

KINDS: dict[type, str] = {
    nodes.Input: "input",
    nodes.Output: "output",
    nodes.Step: "step",
    nodes.Sleep: "sleep",
    nodes.Dispatch: "dispatch",
    nodes.Loop: "loop",
    nodes.LoopOn: "loop_on",
    nodes.ForEach: "foreach",
    nodes.Subflow: "subflow",
    nodes.Parallel: "parallel",
}
"""Every node kind with its word; a visitor's method for a kind is `visit_<word>`."""

R = TypeVar("R")


def qualify(prefix: str, name: str) -> str:
    """The durable path of node `name` inside the subflow instance keyed `prefix` (top level: "";
    spec §3.7)."""
    return f"{prefix}~{name}" if prefix else name


def kind(node: Node) -> str:
    """The node kind's word, as NodeInfo and the diagrams spell it."""
    return KINDS[type(node)]


class Place(NamedTuple):
    """A named node where `walk` finds it. `branches` is where it sits among parallel branches:
    (parallel occurrence, parallel kind, branch index) from the root inwards; `nested` whether it sits
    inside a subflow."""

    path: str
    node: Node
    branches: tuple[tuple[int, str, int], ...] = ()
    nested: bool = False


def walk(flow: Flow, prefix: str = "", *, subflows: bool = True) -> Iterator[Place]:
    """Every named node of `flow` with its durable path, in plan order: a parallel's branches one after
    the other (the parallel itself has no name of its own), a subflow's children right after the subflow
    (under its path) unless `subflows` is False. Parallels are numbered in that order, subflows' included."""
    yield from _walk(flow, prefix, (), False, subflows, [0])


def _walk(
    flow: Flow,
    prefix: str,
    branches: tuple[tuple[int, str, int], ...],
    nested: bool,
    subflows: bool,
    occurrence: list[int],
) -> Iterator[Place]:
    for node in flow.nodes:
        if isinstance(node, nodes.Parallel):
            here = occurrence[0]
            occurrence[0] += 1
            for index, branch in enumerate(node.branches):
                yield from _walk(
                    branch, prefix, (*branches, (here, node.kind, index)), nested, subflows, occurrence
                )
            continue
        path = qualify(prefix, node.name)
        yield Place(path, node, branches, nested)
        if subflows and isinstance(node, nodes.Subflow):
            yield from _walk(node.child, path, branches, True, subflows, occurrence)


class Visitor(Generic[R]):
    """Dispatches a node to `visit_<word>(node, *args)` for its kind (see `KINDS`); a subclass defines the
    methods for the kinds it meets. A kind without one, or something not a node, is a TypeError."""

    _methods: ClassVar[dict[type, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found = {node_kind: getattr(cls, f"visit_{word}", None) for node_kind, word in KINDS.items()}
        cls._methods = {node_kind: method for node_kind, method in found.items() if method is not None}

    def visit(self, node: Node, *args: Any) -> R:
        method = self._methods.get(type(node))
        if method is None:
            method = self._inherited(node)
        result: R = method(self, node, *args)
        return result

    def _inherited(self, node: Node) -> Callable[..., Any]:
        """A subclass of a node kind is visited as that kind (the first in `KINDS` it is an instance of)."""
        for node_kind, method in self._methods.items():
            if isinstance(node, node_kind):
                return method
        raise TypeError(f"not a node: {node!r}")
