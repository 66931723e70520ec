"""The renderers' own shapes: format choice, the graph fold, each format's structure, SVG through Graphviz."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from itertools import combinations
from pathlib import Path

import pytest
from graphviz.backend import dot_command

import flowdeck.engine.render as render_package
from examples import seed
from flowdeck.engine.flow import Flow
from flowdeck.engine.graph import FlowGraph, GraphEdge, GraphNode, Scope, build_graph
from flowdeck.engine.render import FORMATS, render, render_svg, svg
from flowdeck.engine.render.bpmn import NS
from tests.diagrams import tools
from tests.diagrams.sample_flows import every_kind, nested


def test_formats_are_chosen_case_insensitively() -> None:
    assert FORMATS == ("mermaid", "dot", "bpmn", "elk", "json")
    for fmt in FORMATS:
        assert render(seed.fulfilment, fmt.upper()) == render(seed.fulfilment, fmt)


def test_an_unknown_format_names_the_formats() -> None:
    with pytest.raises(
        ValueError, match=r"unknown diagram format 'png'; expected one of: mermaid, dot, bpmn, elk, json"
    ):
        render(seed.fulfilment, "png")


def test_the_fold_of_a_dispatch_draws_every_arm_and_the_join() -> None:
    def node(i: str, kind: str, name: str, path: str = "", tag: str = "") -> GraphNode:
        return GraphNode(i, kind, name, path=path, tag=tag)

    assert build_graph(seed.routed) == FlowGraph(
        "fulfilment",
        (
            node("n1", "input", "order", "order", "Order"),
            node("n2", "output", "total", "total", "int"),
            node("n4", "dispatch", "route", "route", "str"),
            node("n5", "branch", "manual-review", "route"),
            node("n6", "branch", "supervisor", "route"),
            node("n7", "branch", "auto", "route"),
            node("n8", "join-dispatch", ""),
            node("n16", "step", "record", "record"),
        ),
        (
            GraphEdge("n3", "n1", "n2"),
            GraphEdge("n9", "n4", "n5", "when"),
            GraphEdge("n10", "n5", "n8"),
            GraphEdge("n11", "n4", "n6", "when"),
            GraphEdge("n12", "n6", "n8"),
            GraphEdge("n13", "n4", "n7", "otherwise"),
            GraphEdge("n14", "n7", "n8"),
            GraphEdge("n15", "n2", "n4"),
            GraphEdge("n17", "n8", "n16"),
        ),
        {"": Scope("n1", "n16")},
    )


def test_mermaid_of_the_readme_flow() -> None:
    assert render(seed.fulfilment, "mermaid") == (
        "graph LR\n"
        '  n1[/"order"/]\n'
        '  n2("total")\n'
        '  n4("charge")\n'
        '  n6["ship"]\n'
        "  n1 --> n2\n"
        "  n2 --> n4\n"
        "  n4 --> n6\n"
    )


def test_dot_of_the_readme_flow() -> None:
    assert render(seed.fulfilment, "dot") == (
        "digraph flow {\n"
        "  rankdir=LR;\n"
        "  compound=true;\n"
        '  node [fontname="Helvetica" fontsize=11];\n'
        '  edge [fontname="Helvetica" fontsize=10];\n'
        '  n1 [id="fd-n1" label="order" shape=parallelogram];\n'
        '  n2 [id="fd-n2" label="total" shape=box style="rounded"];\n'
        '  n4 [id="fd-n4" label="charge" shape=box style="rounded"];\n'
        '  n6 [id="fd-n6" label="ship" shape=box];\n'
        "  n1 -> n2;\n"
        "  n2 -> n4;\n"
        "  n4 -> n6;\n"
        "}\n"
    )


def test_every_kind_is_drawn_with_its_detail() -> None:
    mermaid = render(every_kind, "mermaid")
    for line in [
        '[["cool<br/>sleep 1h30m"]]',  # sleep with its duration
        '{{"spin<br/>loop"}}',  # loop
        '{{"poll<br/>every fixed(60s).take(3)"}}',  # loop_on with its schedule: Mermaid reads it as written
        '[["items<br/>foreach [x4]"]]',  # foreach with its concurrency
        'subgraph n23["rev"]',  # a subflow expanded
        '-.->|"again"|',  # a loop's back edge
        '{"race"}',
        '{{"zip"}}',
        '{{"gather"}}',
        '-->|"otherwise"|',
    ]:
        assert line in mermaid
    dot = render(every_kind, "dot")
    for line in [
        "subgraph cluster_n23 {",
        "[lhead=cluster_n23]",
        "[ltail=cluster_n23 lhead=cluster_n28]",
        "constraint=false",
    ]:
        assert line in dot


def _tag(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[1]


def test_bpmn_expands_a_subflow_into_a_subprocess_with_its_own_events() -> None:
    root = ET.fromstring(render(seed.with_payment, "bpmn"))
    process = root.find("bpmn:process", NS)
    assert process is not None
    assert [(_tag(e), e.get("name")) for e in process if _tag(e) != "sequenceFlow"] == [
        ("startEvent", None),
        ("userTask", "order"),
        ("serviceTask", "total"),
        ("subProcess", "payment"),
        ("task", "ship"),
        ("endEvent", None),
    ]
    sub = process.find("bpmn:subProcess", NS)
    assert sub is not None
    assert [
        (_tag(e), e.get("name")) for e in sub if _tag(e) not in ("sequenceFlow", "incoming", "outgoing")
    ] == [
        ("startEvent", None),
        ("userTask", "order_id"),
        ("userTask", "amount_cents"),
        ("serviceTask", "charge_id"),
        ("endEvent", None),
    ]
    flows = [(f.get("sourceRef"), f.get("targetRef")) for f in sub.findall("bpmn:sequenceFlow", NS)]
    assert len(flows) == 4


def _bounds(document: str) -> dict[str, tuple[float, float, float, float]]:
    root = ET.fromstring(document)
    found = {}
    for shape in root.iter(f"{{{NS['bpmndi']}}}BPMNShape"):
        b = shape.find("dc:Bounds", NS)
        assert b is not None
        found[shape.get("bpmnElement")] = tuple(float(b.get(k)) for k in ("x", "y", "width", "height"))
    return found


def test_bpmn_shapes_never_overlap_and_children_sit_inside_their_subprocess() -> None:
    document = render(every_kind, "bpmn")
    boxes = _bounds(document)
    graph = build_graph(every_kind)
    root = ET.fromstring(document)
    parent_of = {}
    for container in [root.find("bpmn:process", NS), *root.iter(f"{{{NS['bpmn']}}}subProcess")]:
        for child in container:
            if child.get("id") in boxes:
                parent_of[child.get("id")] = container.get("id")

    def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]

    for a, b in combinations(boxes, 2):
        if parent_of[a] == parent_of[b]:
            assert not overlap(boxes[a], boxes[b]), (a, b)
    for node in graph.nodes:
        if node.parent:
            x, y, w, h = boxes[node.id]
            px, py, pw, ph = boxes[node.parent]
            assert (px <= x, x + w <= px + pw, py <= y, y + h <= py + ph) == (True,) * 4, node


def test_elk_nests_a_subflow_as_a_hierarchical_node() -> None:
    data = json.loads(render(nested, "elk"))
    assert data["layoutOptions"] == {
        "elk.algorithm": "layered",
        "elk.direction": "RIGHT",
        "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
    }
    inner = data["children"][0]
    # One line in the box's corner: the children fill the rest (two lines there were drawn over each other).
    assert inner["labels"] == [{"text": "inner", "width": 55, "height": 28}]
    assert [c["labels"][0]["text"] for c in inner["children"]] == ["amount", "ok"]
    assert [(e["sources"], e["targets"]) for e in inner["edges"]] == [(["n2"], ["n3"])]
    assert [(e["sources"], e["targets"]) for e in data["edges"]] == [(["n1"], ["n5"])]


def test_json_of_a_flow() -> None:
    data = json.loads(render(nested, "json"))
    assert data == {
        "name": "nested",
        "nodes": [
            {
                "id": "n1",
                "name": "inner",
                "type": "subflow",
                "kind": "subflow",
                "path": "inner",
                "tag": "review",
                "lines": ["inner", "subflow review"],
            },
            {
                "id": "n2",
                "name": "amount",
                "type": "input",
                "kind": "input",
                "path": "inner~amount",
                "parent": "n1",
                "tag": "int",
                "lines": ["amount"],
            },
            {
                "id": "n3",
                "name": "ok",
                "type": "output",
                "kind": "output",
                "path": "inner~ok",
                "parent": "n1",
                "tag": "bool",
                "lines": ["ok"],
            },
            {
                "id": "n5",
                "name": "after",
                "type": "step",
                "kind": "step",
                "path": "after",
                "lines": ["after"],
            },
        ],
        "edges": [
            {"id": "n4", "source": "n2", "target": "n3", "style": "flow"},
            {"id": "n6", "source": "n1", "target": "n5", "style": "flow"},
        ],
    }


def test_svg_falls_back_to_graphviz_pure_without_a_system_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dot_command, "DOT_BINARY", dot_command.DOT_BINARY)  # restored afterwards
    monkeypatch.setenv(
        "PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not _has_dot(p))
    )
    svg.dot_binary.cache_clear()
    try:
        assert svg.dot_binary().name == "graphviz-pure"
        drawing = render_svg(every_kind)
    finally:
        svg.dot_binary.cache_clear()
    assert "graphviz-pure" in drawing
    assert drawing.rstrip().endswith("</svg>")


def _has_dot(folder: str) -> bool:
    return (Path(folder) / "dot").exists() or (Path(folder) / "graphviz-pure").exists()


def test_the_render_package_is_callable_as_the_public_render() -> None:
    assert render_package(seed.fulfilment, "Mermaid") == render(seed.fulfilment, "mermaid")


def test_missing_node_tools_fail_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tools, "NODE_TOOLS", tmp_path / "node_tools")
    with pytest.raises(pytest.fail.Exception, match=r"run `bash \.ci/node-tools\.sh`"):
        tools.mermaid(["graph LR"])


def test_mermaid_draws_names_that_hold_its_own_entity_placeholders() -> None:
    """Mermaid holds `#34;` as `ﬂ°°34¶ß` and turns every `ﬂ°°`, `ﬂ°`, `¶ß` back into `&#`, `&`, `;` before
    drawing: a name holding them was drawn as another (`¶ß` as `;`, `ﬂ°°65¶ß` as `A`). (Drawn in Chromium:
    tests/diagrams/test_mermaid_browser.py.)"""
    names = ["a¶ßb", "ﬂ°°65¶ß", "ﬂ°x", '"¼¶ßË|', "¶ß+-.->EÙ"]
    texts = [render(Flow.init("f").input(name, int), "mermaid") for name in names]
    drawn = [tools.mermaid_label_lines(r["labels"][0]) for r in tools.mermaid(texts)]
    assert drawn == [[name] for name in names]
