"""ELK JSON (spec §4.4) for elkjs: a layered left-to-right graph, subflows as hierarchical nodes."""

from __future__ import annotations

import json
from typing import Any

from engine.graph import FlowGraph, GraphNode
from engine.render.common import label_lines

__all__ = ["render", "to_data"]

_LAYOUT = {"elk.algorithm": "layered", "elk.direction": "RIGHT"}
_SMALL = frozenset({"join-dispatch", "join", "race-join", "fork", "race-fork"})


def _text_size(lines: list[str]) -> tuple[int, int]:
    width = max((len(line) for line in lines), default=0)
    return max(40, min(7 * width + 20, 320)), 16 * max(1, len(lines)) + 12


def _child(graph: FlowGraph, node: GraphNode) -> dict[str, Any]:
    lines = [line for line in label_lines(node) if line]
    properties = {"nodeType": node.kind} | ({"status": node.status} if node.status else {})
    data: dict[str, Any] = {
        "id": node.id,
        "labels": [{"text": "\n".join(lines)}] if lines else [],
        "properties": properties,
    }
    if node.kind == "subflow":
        data |= _scope(graph, node.id)
        data["layoutOptions"] = dict(_LAYOUT) | {"elk.padding": "[top=30,left=12,bottom=12,right=12]"}
    elif node.kind in _SMALL:
        data |= {"width": 30, "height": 30}
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
