"""A version's stored graph document: it rebuilds a skeleton that folds, paints and draws exactly as the
served flow does, in every format (checked by the real parsers), survives JSON, refuses what it cannot
read; and the version diff pairs nodes by durable key."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flowdeck.engine import Flow, graph_document, render, schema
from flowdeck.engine.graph import build_graph
from flowdeck.engine.graph_document import GraphDocumentError
from flowdeck.engine.progress import Progress
from flowdeck.engine.version_diff import Change, diff, marks
from flowdeck.store import spi
from tests.diagrams import tools
from tests.diagrams.sample_flows import ALL, every_kind, review

NAMES = sorted(ALL)


def _stored(flow: Flow) -> dict[str, Any]:
    """The document as a store hands it back: through JSON text."""
    return json.loads(json.dumps(graph_document.document_of(flow)))


@pytest.mark.parametrize("name", NAMES)
def test_a_stored_document_folds_into_the_served_flows_graph(name: str) -> None:
    flow = ALL[name]
    skeleton = graph_document.flow_of(_stored(flow))
    assert build_graph(skeleton) == build_graph(flow)
    assert graph_document.document_of(skeleton) == graph_document.document_of(flow)
    assert schema.structure(skeleton).split("||")[0] == schema.structure(flow).split("||")[0]


@pytest.mark.parametrize("name", NAMES)
def test_every_format_draws_the_stored_version_as_the_served_one(name: str) -> None:
    flow = ALL[name]
    skeleton = graph_document.flow_of(_stored(flow))
    for fmt in render.FORMATS:
        assert render.render(skeleton, fmt) == render.render(flow, fmt), fmt


def test_the_drawings_of_stored_versions_pass_the_real_parsers() -> None:
    skeletons = [graph_document.flow_of(_stored(ALL[name])) for name in NAMES]
    assert all(r["ok"] for r in tools.mermaid([render.render(s, "mermaid") for s in skeletons]))
    assert all(r["ok"] for r in tools.bpmn([render.render(s, "bpmn") for s in skeletons]))
    assert all(r["ok"] for r in tools.elk([render.render(s, "elk") for s in skeletons]))
    assert [ok for ok, _, _ in tools.dot([render.render(s, "dot") for s in skeletons])] == [True] * len(NAMES)


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _state(status: spi.Status, waits: dict[str, spi.Wake] | None = None) -> spi.ExecutionState:
    return spi.ExecutionState("e1", "every-kind", status, None, None, "h", T0, T0, waits or {}, False, None)


def test_progress_paints_the_stored_version_as_the_served_one() -> None:
    from flowdeck.engine.progress import build_progress

    skeleton = graph_document.flow_of(_stored(every_kind))
    fields = {
        "order": spi.FieldData.of({"id": 1}, "json"),
        "total": spi.FieldData.of(12, "int"),
        "route#chosen": spi.FieldData.of("big", "str"),
    }
    state = _state(spi.Running(), {"cool": spi.WakeAt(T0 + timedelta(hours=2))})
    served = build_progress(every_kind, state, fields, [])
    stored = build_progress(skeleton, state, fields, [])
    assert stored == served
    assert {n.name: n.status.value for n in stored.nodes}["cool"] == "sleeping"
    assert build_graph(skeleton, stored) == build_graph(every_kind, served)
    assert render.render(skeleton, "json", stored) == render.render(every_kind, "json", served)


def test_the_skeleton_runs_nothing() -> None:
    step = Flow.init("one").step("s", lambda ctx: None)
    skeleton = graph_document.flow_of(_stored(step))
    body = skeleton.nodes[0].body  # type: ignore[union-attr]
    with pytest.raises(Exception, match="runs nothing"):
        body.fn(None)


def test_unknown_keys_are_ignored_and_missing_optional_ones_default() -> None:
    document = {"format": 1, "name": "f", "future": True, "nodes": [{"kind": "step", "name": "s", "new": 1}]}
    assert build_graph(graph_document.flow_of(document)) == build_graph(Flow.init("f").step("s", print))


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "the document should be an object, found list"),
        ({"format": 2, "nodes": []}, "format 2 is not one this engine reads"),
        ({"nodes": []}, "format None is not one this engine reads"),
        ({"format": 1, "nodes": "x"}, "'nodes' should be list, found str"),
        ({"format": 1, "nodes": [{"kind": "teleport", "name": "t"}]}, "at 0: unknown node kind 'teleport'"),
        ({"format": 1, "nodes": [{"kind": "sleep", "name": "z", "seconds": "1"}]}, "'seconds' should be int"),
        ({"format": 1, "nodes": [{"kind": "sleep", "name": "z", "seconds": True}]}, "found bool"),
        ({"format": 1, "nodes": [{"kind": "parallel", "parallel": "all", "branches": []}]}, "zip, gather"),
        (
            {"format": 1, "nodes": [{"kind": "subflow", "name": "s", "child": {"nodes": [3]}}]},
            "at 0/s~/0: a node should be an object, found int",
        ),
    ],
)
def test_a_document_it_cannot_read_is_refused_naming_where(document: Any, problem: str) -> None:
    with pytest.raises(GraphDocumentError) as refused:
        graph_document.flow_of(document)
    assert problem in str(refused.value)


def test_workflow_info_keeps_the_document() -> None:
    info = schema.workflow_info("every-kind", every_kind)
    assert info.graph == graph_document.document_of(every_kind)
    again = spi.WorkflowInfo.model_validate_json(info.model_dump_json())
    assert again.graph == info.graph
    old_row = json.loads(info.model_dump_json())
    del old_row["graph"]
    assert spi.WorkflowInfo.model_validate(old_row).graph is None


# ------------------------------------------------------------------------------------------- diff

V1 = (
    Flow.init("orders")
    .input("order", dict)
    .output("total", lambda ctx: 1, type=int)
    .sleep("cool", timedelta(minutes=5))
    .dispatch("route", type=str)
    .when(lambda ctx: True, lambda ctx: "a", name="fast")
    .otherwise(lambda ctx: "b", name="slow")
    .step("ship", lambda ctx: None)
)
V2 = (
    Flow.init("orders")
    .input("order", dict)
    .output("total", lambda ctx: "1", type=str)
    .sleep("cool", timedelta(minutes=5))
    .dispatch("route", type=str)
    .when(lambda ctx: True, lambda ctx: "a", name="fast")
    .when(lambda ctx: True, lambda ctx: "c", name="express")
    .otherwise(lambda ctx: "b", name="slow")
    .subflow("review", review, lambda ctx: {"amount": 1})
    .step("notify", lambda ctx: None)
)


def test_the_diff_pairs_nodes_by_durable_key_and_shape() -> None:
    assert diff(V1, V2).changes == (
        Change("total", "output", "changed", before="output int", after="output str"),
        Change("ship", "step", "removed", before="step"),
        Change("route#chosen=express", "branch", "added", after="when"),
        Change("review", "subflow", "added", after="subflow"),
        Change("review~amount", "input", "added", after="input int"),
        Change("review~ok", "output", "added", after="output bool"),
        Change("notify", "step", "added", after="step"),
    )
    assert diff(V1, V1).same
    assert diff(every_kind, graph_document.flow_of(_stored(every_kind))).same


def test_a_node_moved_into_a_parallel_is_changed() -> None:
    before = Flow.init("f").step("a", print).step("b", print)
    after = (
        Flow.init("f").step("a", print).and_then(Flow.race(Flow.init("x").step("b", print), Flow.init("y")))
    )
    assert diff(before, after).changes == (Change("b", "step", "changed", before="step", after="race step"),)


def test_marks_name_the_drawn_nodes_on_each_side() -> None:
    found = diff(V1, V2)
    old, new = build_graph(V1), build_graph(V2)
    by_name = {(n.kind, n.name): n.id for n in old.nodes}
    assert marks(old, found, "old") == {
        by_name[("output", "total")]: "changed",
        by_name[("step", "ship")]: "removed",
    }
    named = {n.id: n.name for n in new.nodes}
    assert sorted((named[i], what) for i, what in marks(new, found, "new").items()) == [
        ("amount", "added"),
        ("express", "added"),
        ("notify", "added"),
        ("ok", "added"),
        ("review", "added"),
        ("total", "changed"),
    ]
    assert Progress() == Progress()  # painting is independent of marking: marks never touch statuses
