"""Graphviz DOT (spec §4.3), with subflows expanded as clusters.

Every node carries `id="fd-<graph id>"`, so the `<g>` Graphviz draws for it in SVG has that id and a click
maps to its graph node (the prefix keeps clear of the ids Graphviz gives its own elements). No legend: the
console draws one in HTML from `common.COLOURS`.

Names go only into double-quoted strings, where `\\` and `"` are backslash-escaped, line breaks become
DOT's `\\n` and `&` becomes `&amp;`, so a name can neither end the string nor reach Graphviz's escape
sequences (`\\N`, `\\l`) or its entity references.
"""

from __future__ import annotations

from flowdeck.engine.graph import FlowGraph, GraphEdge, GraphNode
from flowdeck.engine.render.common import colour, label_lines, outline

__all__ = ["quote", "render"]

# kind → (shape attributes, styles); a painted node adds "filled" to its styles.
_SHAPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "input": ("shape=parallelogram", ()),
    "output": ("shape=box", ("rounded",)),
    "step": ("shape=box", ()),
    "sleep": ("shape=doubleoctagon", ()),
    "dispatch": ("shape=diamond", ()),
    "race-fork": ("shape=diamond", ()),
    "fork": ("shape=diamond", ()),
    "join": ("shape=diamond width=0.3 height=0.3", ()),
    "branch": ("shape=box", ("rounded", "dashed")),
    "join-dispatch": ("shape=diamond width=0.3 height=0.3", ()),
    "race-join": ("shape=diamond width=0.3 height=0.3", ()),
    "loop": ("shape=hexagon", ()),
    "loop_on": ("shape=hexagon", ()),
    "foreach": ("shape=component", ()),
    "subflow": ("shape=component", ()),
}


def _line(text: str) -> str:
    # Graphviz reads HTML entities even in plain labels (`&amp;` would draw as `&`): escape the ampersand.
    text = text.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")


def quote(lines: list[str]) -> str:
    """A DOT double-quoted string whose lines are the given texts, exactly."""
    return '"' + "\\n".join(_line(line) for line in lines) + '"'


def _attrs(node: GraphNode) -> str:
    shape, styles = _SHAPES.get(node.kind, ("shape=box", ()))
    attrs = f'id="fd-{node.id}" label={quote([line for line in label_lines(node) if line] or [""])} {shape}'
    if node.status:
        extra = outline(node.status, "dot")
        styles = ("filled", *styles, *((extra,) if extra and extra not in styles else ()))
    if styles:
        attrs += f' style="{",".join(styles)}"'
    if node.status:
        attrs += f' fillcolor="{colour(node.status)}"'
    return attrs


def _exit(graph: FlowGraph, node_id: str) -> str:
    """The node an edge leaving `node_id` starts from: a subflow is left from the end of its child."""
    node = graph.node(node_id)
    end = graph.scopes[node.id].end if node.kind == "subflow" else None
    return _exit(graph, end) if end is not None else node_id


def _edge(graph: FlowGraph, edge: GraphEdge) -> str:
    source, target = graph.node(edge.source), graph.node(edge.target)
    attrs = []
    if edge.label:
        attrs.append(f"label={quote([edge.label])}")
    if edge.style == "back":
        attrs.append("style=dashed constraint=false")
    if source.kind == "subflow" and edge.style != "back":
        attrs.append(f"ltail=cluster_{source.id}")
    if target.kind == "subflow" and edge.style != "back":
        attrs.append(f"lhead=cluster_{target.id}")
    tail = _exit(graph, source.id) if edge.style != "back" else source.id
    suffix = f" [{' '.join(attrs)}]" if attrs else ""
    return f"{tail} -> {target.id}{suffix};"


def _scope(graph: FlowGraph, parent: str, indent: str, out: list[str]) -> None:
    for node in graph.children(parent):
        if node.kind == "subflow":
            out.append(f"{indent}subgraph cluster_{node.id} {{")
            # The cluster is tinted with the subflow's status, so the expanded box is painted too.
            fill = (
                f' style="rounded,filled"; fillcolor="{colour(node.status)}40";'
                if node.status
                else ' style="rounded";'
            )
            out.append(
                f'{indent}  id="fd-cluster-{node.id}"; label={quote([node.name])};{fill} color="#666666";'
            )
            # The subflow's own node sits first in its cluster: it carries its status and receives edges.
            out.append(f"{indent}  {node.id} [{_attrs(node)}];")
            _scope(graph, node.id, indent + "  ", out)
            start = graph.scopes[node.id].start
            if start is not None:
                out.append(f"{indent}  {node.id} -> {start};")
            out.append(f"{indent}}}")
        else:
            out.append(f"{indent}{node.id} [{_attrs(node)}];")
    out.extend(indent + _edge(graph, edge) for edge in graph.edges_within(parent))


def render(graph: FlowGraph) -> str:
    out = [
        "digraph flow {",
        "  rankdir=LR;",
        "  compound=true;",
        '  node [fontname="Helvetica" fontsize=11];',
        '  edge [fontname="Helvetica" fontsize=10];',
    ]
    _scope(graph, "", "  ", out)
    out.append("}")
    return "\n".join(out) + "\n"
