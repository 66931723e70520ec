"""Every example flow in every format, plain and painted, accepted by the real tools."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from flowdeck.engine import progress as progress_
from flowdeck.engine.flow import Flow
from flowdeck.engine.progress import NodeProgress, NodeStatus, Progress
from flowdeck.engine.render import render, render_svg
from tests.diagrams import tools
from tests.diagrams.sample_flows import ALL

STATUSES = list(NodeStatus)


def cycled(flow: Flow) -> Progress:
    """Every status in turn over the flow's nodes, with the extras each carries."""
    rows = []
    for i, (path, node) in enumerate(progress_.walk(flow)):
        status = STATUSES[i % len(STATUSES)]
        kind = progress_.node_type(node)
        until = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC) if status is NodeStatus.SLEEPING else None
        detail = {"failed": 'boom <&> "quoted"', "stopped": "F0001: a mistake"}.get(status, "")
        done, total = (2, 5) if kind == "foreach" else (None, None)
        rows.append(NodeProgress(path, kind, status, detail or ("2/5" if total else ""), until, done, total))
    return Progress(tuple(rows))


CASES = [(name, progress) for name, flow in ALL.items() for progress in (None, cycled(flow))]
IDS = [f"{name}{'-painted' if progress else ''}" for name, progress in CASES]


def _rendered(fmt: str) -> list[str]:
    return [render(ALL[name], fmt, progress) for name, progress in CASES]


def test_dot_accepts_every_example() -> None:
    results = tools.dot(_rendered("dot"))
    refused = {case: err for case, (ok, _, err) in zip(IDS, results, strict=True) if not ok}
    assert refused == {}


def test_graphviz_pure_accepts_every_example() -> None:
    results = tools.dot(_rendered("dot"), program="graphviz-pure")
    refused = {case: err for case, (ok, _, err) in zip(IDS, results, strict=True) if not ok}
    assert refused == {}


def test_mermaid_parses_every_example() -> None:
    results = tools.mermaid(_rendered("mermaid"))
    refused = {case: r for case, r in zip(IDS, results, strict=True) if not r["ok"]}
    assert refused == {}
    assert {r["type"] for r in results} == {"flowchart-v2"}


def test_bpmn_moddle_reads_every_example_with_every_element_drawn() -> None:
    results = tools.bpmn(_rendered("bpmn"))
    refused = {case: r for case, r in zip(IDS, results, strict=True) if not r["ok"]}
    assert refused == {}


def test_elkjs_lays_out_every_example() -> None:
    results = tools.elk(_rendered("elk"))
    refused = {case: r for case, r in zip(IDS, results, strict=True) if not r["ok"]}
    assert refused == {}


def test_json_is_json_with_every_node_and_edge_end() -> None:
    for name, progress in CASES:
        data = json.loads(render(ALL[name], "json", progress))
        ids = {n["id"] for n in data["nodes"]}
        assert all(e["source"] in ids and e["target"] in ids for e in data["edges"]), name
        assert all(("status" in n) == (progress is not None) for n in data["nodes"]), name


@pytest.mark.parametrize("name", ["every_kind", "with_payment", "decided"])
def test_render_svg_draws_through_graphviz(name: str) -> None:
    svg = render_svg(ALL[name], cycled(ALL[name]))
    assert svg.lstrip().startswith("<?xml")
    assert svg.rstrip().endswith("</svg>")
