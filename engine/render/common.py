"""What every format shares: the status palette and the text lines a node's label is made of."""

from __future__ import annotations

from flowdeck.engine.graph import GraphNode
from flowdeck.engine.progress import NodeStatus

__all__ = ["COLOURS", "OUTLINES", "PENDING_COLOUR", "colour", "label_lines", "outline", "title"]

# Spec §4.7, plus Flowdeck's own: compensated (rolled back), stopped (waiting for a person), a race's won
# and lost arms, an answered stop (awaiting resume) and a node a cancel or an end interrupted. The one
# palette: every format and the console's HTML legend read it from here.
COLOURS: dict[str, str] = {
    NodeStatus.COMPLETED: "#90EE90",
    NodeStatus.RUNNING: "#FFD700",
    NodeStatus.PENDING: "#D3D3D3",
    NodeStatus.WAITING: "#87CEEB",
    NodeStatus.SLEEPING: "#DDA0DD",
    NodeStatus.FAILED: "#FF6B6B",
    NodeStatus.COMPENSATED: "#F4A460",
    NodeStatus.STOPPED: "#FFA500",
    NodeStatus.WON: "#45B36B",
    NodeStatus.LOST: "#A9A9A9",
    NodeStatus.ANSWERED: "#7FD8C8",
    NodeStatus.INTERRUPTED: "#C9B3A6",
}
# Outlines that tell statuses apart without colour: a lost arm and an interrupted node dashed, a won arm,
# a stop (answered or not) and a failure drawn heavy, a compensated node dotted.
OUTLINES: dict[str, str] = {
    NodeStatus.LOST: "dashed",
    NodeStatus.WON: "bold",
    NodeStatus.STOPPED: "bold",
    NodeStatus.FAILED: "bold",
    NodeStatus.COMPENSATED: "dotted",
    NodeStatus.ANSWERED: "bold",
    NodeStatus.INTERRUPTED: "dashed",
}
PENDING_COLOUR = COLOURS[NodeStatus.PENDING]


def colour(status: str) -> str:
    return COLOURS.get(status, PENDING_COLOUR)


_MERMAID_OUTLINES = {
    "dashed": "stroke:#333,stroke-width:2px,stroke-dasharray:5 4,",
    "bold": "stroke:#000,stroke-width:3px,",
    "dotted": "stroke:#333,stroke-width:2px,stroke-dasharray:2 3,",
}


def outline(status: str, format: str) -> str:
    """The outline of a `status` in `format`: DOT styles ("dashed"), or Mermaid style declarations."""
    style = OUTLINES.get(status, "")
    if format == "mermaid":
        return _MERMAID_OUTLINES.get(style, "stroke:#333,")
    return style


# Structural nodes are drawn with a word rather than a user's name.
_STRUCTURAL_TITLES = {"join-dispatch": "", "join": "", "race-join": ""}


def title(node: GraphNode) -> str:
    """The first line of a label: the user's name, or the structure's word."""
    if node.kind in _STRUCTURAL_TITLES:
        return _STRUCTURAL_TITLES[node.kind]
    return node.name


def label_lines(node: GraphNode) -> list[str]:
    """The lines of a node's label: its title, what kind of wait or fan-out it is, and its progress."""
    lines = [title(node)]
    if node.kind == "sleep":
        lines.append(f"sleep {node.duration}")
    elif node.kind == "foreach":
        lines.append("foreach" if node.concurrency is None else f"foreach [x{node.concurrency}]")
    elif node.kind == "loop_on":
        lines.append(f"every {node.schedule}")
    elif node.kind == "loop":
        lines.append("loop")
    elif node.kind == "subflow" and node.tag:
        lines.append(f"subflow {node.tag}")
    lines.extend(progress_lines(node))
    return lines


DETAIL_CHARS = 40
"""A detail (an error, a stop reason) is cut to this in a label: the whole text is in the JSON format's
`detail` and the console's node panel, and a long one would stretch its box across the diagram."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1].rstrip() + "…"


def _instant(iso: str) -> str:
    """`2030-01-02T00:00:00+00:00` → `2030-01-02 00:00 UTC`: the minute is what an operator reads."""
    day, _, time = iso.partition("T")
    if not time:
        return iso
    zone = time[8:].split(".")[-1] if len(time) > 8 else ""
    zone = "UTC" if zone in ("+00:00", "Z", "") else zone.lstrip("0123456789")
    return f"{day} {time[:5]} {zone}"


# The statuses whose label carries their detail (the error, the stop, what was answered).
_EXPLAINED = frozenset({NodeStatus.FAILED, NodeStatus.STOPPED, NodeStatus.LOST, NodeStatus.ANSWERED})


def progress_lines(node: GraphNode) -> list[str]:
    if not node.status or node.kind in _STRUCTURAL_TITLES or node.kind in ("fork", "race-fork"):
        return []
    counted = node.kind in ("foreach", "loop_on", "loop") and node.detail
    if node.status == NodeStatus.SLEEPING and node.until:
        # a loop_on between iterations sleeps: both its deadline and how far it has come
        return [f"sleeping until {_instant(node.until)}", *([node.detail] if counted else [])]
    if counted:
        return [f"{node.status} {node.detail}"]
    if node.status in _EXPLAINED and node.detail:
        return [node.status, _short(node.detail)]
    return [node.status]
