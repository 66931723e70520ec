"""ELK JSON (spec §4.4) for elkjs: a layered left-to-right graph, subflows as hierarchical nodes.

Node ids are the graph's own. A node's `properties` carry its status, detail, durable path and fill (from
`common.COLOURS`), so a drawer paints it without a palette of its own; a subflow's label is its name
alone, one line in its top-left corner, as its children fill the box below it.
"""

from __future__ import annotations

import json
from typing import Any

from flowdeck.engine.graph import FlowGraph, GraphNode
from flowdeck.engine.render.common import colour, label_lines

__all__ = ["render", "to_data"]

# The model order (the plan's: a parallel's branches top to bottom, as Mermaid and DOT draw them) is kept
# where crossings allow; without it ELK's crossing minimisation swaps a race's arms around.
_LAYOUT = {
    "elk.algorithm": "layered",
    "elk.direction": "RIGHT",
    "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
}
_SMALL = frozenset({"join-dispatch", "join", "race-join", "fork", "race-fork"})


def _text_size(lines: list[str]) -> tuple[int, int]:
    width = max((len(line) for line in lines), default=0)
    return max(40, min(7 * width + 20, 320)), 16 * max(1, len(lines)) + 12


def _child(graph: FlowGraph, node: GraphNode) -> dict[str, Any]:
    lines = [line for line in label_lines(node) if line]
    if node.kind == "subflow":
        lines = lines[:1]
    properties: dict[str, Any] = {"nodeType": node.kind}
    if node.path:
        properties["path"] = node.path
    if node.status:
        properties |= {"status": node.status, "fill": colour(node.status)}
        if node.detail:
            properties["detail"] = node.detail
    data: dict[str, Any] = {
        "id": node.id,
        "labels": [{"text": "\n".join(lines)}] if lines else [],
        "properties": properties,
    }
    if node.kind == "subflow":
        data |= _scope(graph, node.id)
        data["layoutOptions"] = dict(_LAYOUT) | {
            "elk.padding": "[top=30,left=12,bottom=12,right=12]",
            "elk.nodeLabels.placement": "[H_LEFT, V_TOP, INSIDE]",
        }
        if lines:
            width, height = _text_size(lines)
            data["labels"] = [{"text": lines[0], "width": width, "height": height}]
    elif node.kind in _SMALL:
        # a diamond (the drawer's): wide enough that a fork's word ("race", "zip") sits inside it legibly
        data |= {"width": 48, "height": 48}
    else:
        width, height = _text_size(lines)
        data |= {"width": max(120, width), "height": max(40, height)}
    return data


def _scope(graph: FlowGraph, parent: str) -> dict[str, Any]:
    return {
        "children": [_child(graph, n) for n in graph.children(parent)],
        "edges": [
            {"id": e.id, "sources": [e.source], "targets": [e.target]}
            | ({"labels": [{"text": e.label, "width": 7 * len(e.label), "height": 14}]} if e.label else {})
            for e in graph.edges_within(parent)
        ],
    }


def to_data(graph: FlowGraph) -> dict[str, Any]:
    return {"id": "root", "layoutOptions": dict(_LAYOUT)} | _scope(graph, "")


def render(graph: FlowGraph) -> str:
    return json.dumps(to_data(graph), indent=2)
