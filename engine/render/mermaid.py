"""Mermaid flowchart text (spec §4.2), with subflows expanded as subgraphs.

Names go only into quoted labels, and only the characters that could end a label or reach the HTML Mermaid
draws labels with are written as Mermaid entity codes (`#35;` for `#`): the quote, `#` (which starts an
entity), `<`, `>`, `&`, the backtick (which opens a markdown string), the pipe (an edge label's fence),
control characters and line breaks, and edge spaces (which Mermaid trims). Everything else is written as
it is, so `delivery-window` stays readable when someone copies the Mermaid into their docs.

Three pairs survive no escaping. Mermaid draws a backslash followed by `n` as a line break, even when both
came from entity codes; and it holds an entity code `#34;` as `ﬂ°°34¶ß`, then turns every `ﬂ°` and `¶ß` left
in the drawing into `&` and `;` (its own or the name's, coded or not: `a¶ßb` was drawn `a;b`). A name holding
one of these pairs gets an invisible word joiner (U+2060) between its two characters, so it is drawn as
written.
"""

from __future__ import annotations

from flowdeck.engine.graph import FlowGraph, GraphEdge, GraphNode
from flowdeck.engine.render.common import colour, label_lines, outline

__all__ = ["JOINED", "WORD_JOINED", "escape", "render"]

WORD_JOINED = "\\\u2060n"  # a backslash, a word joiner, then n: drawn as `\n`, never as a line break
# Each pair Mermaid would draw as something else, and how it is written instead.
JOINED = {"\\n": WORD_JOINED, "¶ß": "¶\u2060ß", "ﬂ°": "ﬂ\u2060°"}

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


_CODED = frozenset('"#<>&`|\u2028\u2029')


def _plain(c: str) -> bool:
    return (c not in _CODED and c.isprintable()) or c == " "


def escape(text: str) -> str:
    """Text for inside a double-quoted Mermaid label: what Mermaid reads as syntax or markup as its numeric
    entity code (edge spaces too, which Mermaid would trim), the rest as written."""
    body = text.strip(" ")
    lead, trail = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
    for pair, joined in JOINED.items():
        body = body.replace(pair, joined)
    coded = "".join(c if _plain(c) else f"#{ord(c)};" for c in body)
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


def render(graph: FlowGraph) -> str:
    """Node ids are the graph's own (`n3`), so a click on a drawn node maps to its graph node. No legend:
    the console draws one in HTML from `common.COLOURS`."""
    out = ["graph LR"]
    _scope(graph, "", "  ", out)
    for node in graph.nodes:
        if node.status:
            out.append(
                f"  style {node.id} fill:{colour(node.status)},{outline(node.status, 'mermaid')}color:#000"
            )
    return "\n".join(out) + "\n"
