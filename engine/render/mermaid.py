"""Mermaid flowchart text (spec §4.2), with subflows expanded as subgraphs and a legend when painted.

Names go only into quoted labels, and every character that is not a letter, a digit or a space is written
as a Mermaid entity code (`#35;` for `#`), so quotes, brackets, pipes, `<`, `&`, line breaks or keywords
such as `end` can neither close a label nor reach the HTML Mermaid draws labels with.

One sequence survives no escaping: Mermaid draws a backslash followed by `n` as a line break, even when
both came from entity codes. A name holding that pair gets an invisible word joiner (U+2060) between them,
so it is drawn as written.
"""

from __future__ import annotations

from engine.graph import FlowGraph, GraphEdge, GraphNode
from engine.render.common import COLOURS, colour, label_lines

__all__ = ["WORD_JOINED", "escape", "render"]

WORD_JOINED = "\\\u2060n"  # a backslash, a word joiner, then n: drawn as `\n`, never as a line break

_SHAPES: dict[str, tuple[str, str]] = {
    "input": ("[/", "/]"),
    "output": ("(", ")"),
    "step": ("[", "]"),
    "sleep": ("[[", "]]"),
    "foreach": ("[[", "]]"),
    "dispatch": ("{", "}"),
    "race-fork": ("{", "}"),
    "branch": ("([", "])"),
    "join-dispatch": ("((", "))"),
    "race-join": ("((", "))"),
    "loop": ("{{", "}}"),
    "loop_on": ("{{", "}}"),
    "fork": ("{{", "}}"),
    "join": ("{{", "}}"),
}


def escape(text: str) -> str:
    """Text for inside a double-quoted Mermaid label: letters, digits and inner spaces as they are,
    anything else as its numeric entity code (edge spaces too, which Mermaid would trim)."""
    body = text.strip(" ")
    lead, trail = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
    body = body.replace("\\n", WORD_JOINED)
    coded = "".join(c if c.isalnum() or c == " " else f"#{ord(c)};" for c in body)
    if not body:
        return "#32;" * len(text)
    return "#32;" * lead + coded + "#32;" * trail


def _label(lines: list[str]) -> str:
    # An empty label still needs a character for the shape to parse; a space draws nothing.
    text = "<br/>".join(escape(line) for line in lines if line) or " "
    return f'"{text}"'


def _node(node: GraphNode) -> str:
    opening, closing = _SHAPES.get(node.kind, ("[", "]"))
    return f"{node.id}{opening}{_label(label_lines(node))}{closing}"


def _edge(edge: GraphEdge) -> str:
    arrow = "-.->" if edge.style == "back" else "-->"
    label = f"|{_label([edge.label])}|" if edge.label else ""
    return f"{edge.source} {arrow}{label} {edge.target}"


def _scope(graph: FlowGraph, parent: str, indent: str, out: list[str]) -> None:
    for node in graph.children(parent):
        if node.kind == "subflow":
            # Mermaid clips a subgraph title past one line: the name only (the fill says the status).
            out.append(f"{indent}subgraph {node.id}[{_label([node.name])}]")
            out.append(f"{indent}  direction LR")
            _scope(graph, node.id, indent + "  ", out)
            out.append(f"{indent}end")
        else:
            out.append(indent + _node(node))
    out.extend(indent + _edge(edge) for edge in graph.edges_within(parent))


def _legend(out: list[str]) -> None:
    # A row of plain nodes joined by invisible links: a subgraph here would stretch the flow's first edge.
    out.append('  legend(["Legend"])')
    for status in COLOURS:
        out.append(f'  legend_{status}["{status}"]')
    out.append("  legend ~~~ " + " ~~~ ".join(f"legend_{status}" for status in COLOURS))
    out.append("  style legend fill:#FFFFFF,stroke:#999,color:#000")
    for status, fill in COLOURS.items():
        out.append(f"  style legend_{status} fill:{fill},stroke:#333,color:#000")


def render(graph: FlowGraph) -> str:
    out = ["graph LR"]
    painted = [n for n in graph.nodes if n.status]
    if painted:  # first, so that the layout puts it above the flow rather than beside its start
        _legend(out)
    _scope(graph, "", "  ", out)
    for node in painted:
        out.append(f"  style {node.id} fill:{colour(node.status)},stroke:#333,color:#000")
    return "\n".join(out) + "\n"
