"""Where each drawn node sits in its plan, in words: the parallels and branches that lead to it.

A race's arms may share a durable name (the fulfilment's three `decision` outputs); a table listing them
tells them apart by their place: `race 1 branch 2 › race 2 branch 1`. Parallels are numbered per kind in
plan order from 1, branches from 1; a node on the main line has no words. Places are keyed by the id the
drawing gives the node (`NodeProgress.place`, `graph.GraphNode.id`).

A node key (the console's `#node=` selection, its node panel's URL) names a durable path, or one place:
`decision@n14` (a path that several places carry, told apart by the drawn id) and `@n6` (a gateway, which
has no path). `select` reads one against a flow; `gateway` gives a fork's or join's arms as places.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowdeck.engine import graph, schema, traversal

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["Gateway", "Selection", "branch_words", "gateway", "key_of", "select"]

_FORKS = ("fork", "race-fork")
_JOINS = ("join", "race-join")


@dataclass(frozen=True)
class Selection:
    """What a node key names: a durable `path` ("" for a gateway) and, when it names one, its `place`."""

    path: str
    place: str = ""


@dataclass(frozen=True)
class Gateway:
    """A parallel's fork and join in the drawing, its kind (race, zip, gather, …), its number among the
    parallels of that kind (`ordinal`, from 1) and its arms: each branch's named places in plan order."""

    kind: str
    ordinal: int
    fork: str
    join: str
    arms: tuple[tuple[str, ...], ...]


def key_of(path: str, place: str) -> str:
    """The key selecting `place`: `path@place`, or `@place` for a gateway."""
    return f"{path}@{place}"


def select(flow: Flow, key: str) -> Selection | None:
    """The node `key` names in `flow`, or None. A whole durable path wins over a `path@place` reading of
    it (a node may be named with an `@`); a place must carry the path before the `@`."""
    if key in schema.durable_names(flow):
        return Selection(key)
    head, at, place = key.rpartition("@")
    if not at:
        return None
    drawn = {n.id: n for n in graph.build_graph(flow).nodes}
    node = drawn.get(place)
    if node is None or node.kind == "branch":
        return None
    if node.path and node.path == head:
        return Selection(head, place)
    if not node.path and not head and node.kind in (*_FORKS, *_JOINS):
        return Selection("", place)
    return None


def gateway(flow: Flow, place: str) -> Gateway | None:
    """The parallel whose fork or join is drawn as `place`, or None."""
    drawn = graph.build_graph(flow)
    # the drawing adds a parallel's fork and join before its branches, and walks the plan in the order
    # `traversal.walk` numbers parallels in: the k-th fork and the k-th join are parallel k
    forks = [n for n in drawn.nodes if n.kind in _FORKS]
    joins = [n for n in drawn.nodes if n.kind in _JOINS]
    k = next((i for i, (f, j) in enumerate(zip(forks, joins, strict=True)) if place in (f.id, j.id)), None)
    if k is None:
        return None
    fork, join = forks[k], joins[k]
    count = sum(1 for e in drawn.edges if e.source == fork.id)
    arms: list[list[str]] = [[] for _ in range(count)]
    for node_id, where in _placed(flow, drawn):
        index = next((i for at, _, i in where.branches if at == k), None)
        if index is not None:
            arms[index].append(node_id)
    # numbered as branch_words numbers it; a parallel with no named node has no words to agree with
    ordinal = _ordinals(_branches(flow)).get(k) or sum(1 for f in forks[: k + 1] if f.name == fork.name)
    return Gateway(fork.name, ordinal, fork.id, join.id, tuple(tuple(a) for a in arms))


def branch_words(flow: Flow) -> dict[str, str]:
    """Each named node's drawn id → the branches leading to it ("" on the main line)."""
    ordinals = _ordinals(_branches(flow))
    return {
        node_id: " › ".join(f"{kind} {ordinals[at]} branch {index + 1}" for at, kind, index in place.branches)
        for node_id, place in _placed(flow, graph.build_graph(flow))
    }


def _placed(flow: Flow, drawn: graph.FlowGraph) -> Iterable[tuple[str, traversal.Place]]:
    """Each named node's drawn id with its place: the drawing numbers named nodes in plan order, the order
    `traversal.walk` yields them."""
    ids = [n.id for n in drawn.nodes if n.path and n.kind != "branch"]
    return zip(ids, traversal.walk(flow), strict=True)


def _branches(flow: Flow) -> Iterable[tuple[int, str, int]]:
    return (branch for place in traversal.walk(flow) for branch in place.branches)


def _ordinals(branches: Iterable[tuple[int, str, int]]) -> dict[int, int]:
    """Each parallel's plan-wide number → its number among the parallels of its kind (race 1, race 2)."""
    seen: dict[int, int] = {}
    per_kind: dict[str, int] = {}
    for at, kind, _ in branches:
        if at not in seen:
            per_kind[kind] = seen[at] = per_kind.get(kind, 0) + 1
    return seen
