"""Painting as the real tools read it back: per drawn node (graph id), the status its fill says and the
text lines it carries, in each format. Mermaid through Mermaid's parser, DOT through Graphviz's SVG, BPMN
through bpmn-moddle, ELK through an elkjs layout, JSON through pydantic models that forbid unknown keys
(the diagram's, and the REST API's NodeProgressDto for the progress itself).

A composition's test drives a real execution, then asks `read(format, flow, progress)` and compares it
with what it expects per place: behaviour, not "it rendered".
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict

from flowdeck.console.schemas import NodeProgressDto, node_progress_of
from flowdeck.engine import Flow
from flowdeck.engine.graph import build_graph
from flowdeck.engine.progress import Progress
from flowdeck.engine.render import render
from flowdeck.engine.render.common import COLOURS
from tests.diagrams import tools

FORMATS = ("mermaid", "dot", "bpmn", "elk", "json")
_STATUS_OF = {colour.upper(): status for status, colour in COLOURS.items()}
_SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Painted:
    """One drawn node as a tool read it: its status (from its fill), its text lines, and the subflow it is
    drawn inside (`within`, "" at the top; in DOT's SVG, the cluster whose box holds it)."""

    status: str
    lines: tuple[str, ...]
    within: str = ""


def _status(fill: str | None) -> str:
    assert fill, "a painted node without a fill"
    return _STATUS_OF[fill.upper()]


def _mermaid(flow: Flow, progress: Progress) -> dict[str, Painted]:
    [result] = tools.mermaid([render(flow, "mermaid", progress)])
    assert result["ok"], result
    within = {n: sub for sub, found in result["subgraphs"].items() for n in found["nodes"]}
    out: dict[str, Painted] = {}
    for place, vertex in result["vertices"].items():
        fills = [s.split(":", 1)[1] for s in vertex["styles"] if s.startswith("fill:")]
        text = vertex["text"]
        if place in result["subgraphs"]:  # a style on a subgraph's id makes a vertex of it
            text = result["subgraphs"][place]["title"]
        lines = tuple(tools.mermaid_label_lines(text))
        out[place] = Painted(_status(fills[-1] if fills else None), lines, within.get(place, ""))
    return out


def _dot(flow: Flow, progress: Progress) -> dict[str, Painted]:
    [(ok, svg, err)] = tools.dot([render(flow, "dot", progress)])
    assert ok, err
    out: dict[str, Painted] = {}
    at: dict[str, tuple[float, float]] = {}
    clusters: dict[str, tuple[str, tuple[float, float, float, float]]] = {}
    for group in ET.fromstring(svg.encode()).iter(f"{_SVG}g"):
        gid = group.get("id") or ""
        if not gid.startswith("fd-"):
            continue
        outline = next(e for e in group if e.get("fill") not in (None, "none"))
        if gid.startswith("fd-cluster-"):  # Graphviz draws a cluster apart from the nodes inside it
            clusters[gid[len("fd-cluster-") :]] = (_status(outline.get("fill")), _bbox(outline))
            continue
        texts = list(group.iter(f"{_SVG}text"))
        lines = tuple((t.text or "").replace("\xa0", " ") for t in texts)
        out[gid[len("fd-") :]] = Painted(_status(outline.get("fill")), lines)
        x0, y0, w, h = _bbox(outline)
        at[gid[len("fd-") :]] = (x0 + w / 2, y0 + h / 2)
    for place, (status, _) in clusters.items():
        assert out[place].status == status, (place, "a cluster is tinted with its subflow's status")
    for place, (x, y) in at.items():
        around = [
            (w * h, sub)
            for sub, (_, (x0, y0, w, h)) in clusters.items()
            if sub != place and x0 <= x <= x0 + w and y0 <= y <= y0 + h
        ]
        if around:  # the innermost cluster the node is drawn in
            out[place] = replace(out[place], within=min(around)[1])
    return out


def _bbox(shape: ET.Element) -> tuple[float, float, float, float]:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", shape.get("points") or shape.get("d") or "")]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)


def _bpmn(flow: Flow, progress: Progress) -> dict[str, Painted]:
    [result] = tools.bpmn([render(flow, "bpmn", progress)])
    assert result["ok"], result
    graph_ids = {n.id for n in build_graph(flow).nodes}
    out: dict[str, Painted] = {}
    for place, element in result["painted"].items():
        if place not in graph_ids:  # the start and end events BPMN adds around each scope
            continue
        told = "\n".join(element["documentation"]).split("\n") if element["documentation"] else []
        title = [element["name"]] if element.get("name") else []
        out[place] = Painted(_status(element.get("fill")), tuple(title + told), element["within"])
    return out


def _elk(flow: Flow, progress: Progress) -> dict[str, Painted]:
    [result] = tools.elk([render(flow, "elk", progress)])
    assert result["ok"], result
    out: dict[str, Painted] = {}
    for place, node in result["placed"].items():
        props = node["properties"]
        assert COLOURS[props["status"]] == props["fill"], (place, props)
        lines = tuple(line for text in node["labels"] for line in text.split("\n"))
        out[place] = Painted(props["status"], lines, node["within"])
    return out


class DiagramNode(BaseModel):
    """The JSON format's node (engine/render/jsonfmt.py): unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    name: str
    type: str
    kind: str
    lines: list[str]
    path: str | None = None
    parent: str | None = None
    tag: str | None = None
    duration: str | None = None
    concurrency: int | None = None
    schedule: str | None = None
    status: str
    detail: str | None = None
    until: str | None = None
    done: int | None = None
    total: int | None = None
    itemsRunning: int | None = None  # the wire's camelCase
    itemsFailed: int | None = None
    iterations: int | None = None


class DiagramEdge(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    source: str
    target: str
    style: str
    label: str | None = None


class Diagram(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    nodes: list[DiagramNode]
    edges: list[DiagramEdge]
    legend: dict[str, str]
    focus: str | None = None  # the node the console opens the drawing on (engine/focus.py)


def json_nodes(flow: Flow, progress: Progress) -> dict[str, DiagramNode]:
    """The JSON diagram's nodes by id, validated."""
    diagram = Diagram.model_validate_json(render(flow, "json", progress))
    return {n.id: n for n in diagram.nodes}


def wire_progress(progress: Progress) -> dict[str, NodeProgressDto]:
    """The progress as the REST API sends it, read back through its own model, by place."""
    dtos = [node_progress_of(n) for n in progress.nodes]
    text = json.dumps([d.model_dump(mode="json", by_alias=True) for d in dtos])
    read = [NodeProgressDto.model_validate(item) for item in json.loads(text)]
    return {d.place: d for d in read}


def _json(flow: Flow, progress: Progress) -> dict[str, Painted]:
    nodes = json_nodes(flow, progress)
    return {place: Painted(n.status, tuple(n.lines), n.parent or "") for place, n in nodes.items()}


READERS: dict[str, Callable[[Flow, Progress], dict[str, Painted]]] = {
    "mermaid": _mermaid,
    "dot": _dot,
    "bpmn": _bpmn,
    "elk": _elk,
    "json": _json,
}


def read(format: str, flow: Flow, progress: Progress) -> dict[str, Painted]:
    """Every drawn node of `flow` with `progress` painted, as `format`'s real tool read it, by graph id."""
    return READERS[format](flow, progress)


def places(flow: Flow) -> dict[str, str]:
    """Durable path → graph id, for flows where no two places share a path (the race test covers those)."""
    found: dict[str, str] = {}
    for node in build_graph(flow).nodes:
        if node.path and node.kind != "branch":
            assert node.path not in found, f"{node.path} has two places: name them by id"
            found[node.path] = node.id
    return found


def expect_text(format: str, painted: Painted, *wanted: str) -> None:
    """The node's text holds each wanted line, where the format carries text: Mermaid's subgraph title and
    ELK's subflow label are the name alone, BPMN's name is the title and its documentation the progress."""
    for line in wanted:
        assert line in painted.lines, (format, line, painted.lines)


Expected = dict[str, tuple[str, ...]]
"""Durable path → (status, then text lines the node must carry)."""


def check(format: str, flow: Flow, progress: Progress, expected: Expected) -> dict[str, Painted]:
    """Every expected place painted with its status and carrying its lines, as `format`'s tool read it. A
    subflow drawn as a container (Mermaid's subgraph, ELK's hierarchical node) is titled by its name
    alone, its status in its fill: only the name is asked of it there."""
    got = read(format, flow, progress)
    ids = places(flow)
    kinds = {n.id: n.kind for n in build_graph(flow).nodes}
    for path, (status, *lines) in expected.items():
        place = ids[path]
        node = got[place]
        assert (path, node.status) == (path, status), (format, path, node)
        if kinds[place] == "subflow" and format in ("mermaid", "elk"):
            lines = [path.rpartition("~")[2]]
        for line in lines:
            assert line in node.lines, (format, path, line, node.lines)
    return got
