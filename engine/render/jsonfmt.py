"""The graph as plain JSON (spec §4.5): nodes with their type, status and subflow parent, and edges.

Each node's `id` is the one every other format puts on its element (DOT's `fd-<id>`, Mermaid's node id,
BPMN's element id, ELK's node id), so the console maps a click to this entry; `path` is its durable key
(shared by a race's arms: `id` tells them apart), `kind` repeats `type` under the name the click panel
reads, `lines` are the label's lines as DOT draws them (a live repaint changes the drawn text to them).
Painted, a foreach adds `done`, `total`, `itemsRunning`, `itemsFailed`, and a loop_on or a completed loop
`iterations`; the document gains `focus`, the id of the node that matters most (engine/focus.py).
"""

from __future__ import annotations

import json
from typing import Any

from flowdeck.engine import focus
from flowdeck.engine.graph import FlowGraph, GraphNode
from flowdeck.engine.render.common import COLOURS, label_lines

__all__ = ["render", "to_data"]


def _node(node: GraphNode) -> dict[str, Any]:
    data: dict[str, Any] = {"id": node.id, "name": node.name, "type": node.kind, "kind": node.kind}
    data["lines"] = [line for line in label_lines(node) if line]  # as DOT draws them: a live repaint's text
    optional = {
        "path": node.path,
        "parent": node.parent,
        "tag": node.tag,
        "duration": node.duration,
        "concurrency": node.concurrency,
        "schedule": node.schedule,
        "status": node.status,
        "detail": node.detail,
        "until": node.until,
        "done": node.done,
        "total": node.total,
        "itemsRunning": node.items_running,
        "itemsFailed": node.items_failed,
        "iterations": node.iterations,
    }
    data.update({key: value for key, value in optional.items() if value not in ("", None)})
    return data


def to_data(graph: FlowGraph) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": graph.name,
        "nodes": [_node(n) for n in graph.nodes],
        "edges": [
            {"id": e.id, "source": e.source, "target": e.target, "style": e.style}
            | ({"label": e.label} if e.label else {})
            for e in graph.edges
        ],
    }
    if any(n.status for n in graph.nodes):
        data["legend"] = dict(COLOURS)
        data["focus"] = focus.matters_most(graph.nodes)  # where the console's viewer opens a large drawing
    return data


def render(graph: FlowGraph) -> str:
    return json.dumps(to_data(graph), indent=2)
