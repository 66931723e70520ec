"""The node that matters most (engine/focus.py): where a diagram too large to show whole opens."""

from __future__ import annotations

from flowdeck.engine.focus import matters_most
from flowdeck.engine.graph import GraphNode


def _n(id: str, status: str, parent: str = "", path: str | None = None, kind: str = "step") -> GraphNode:
    return GraphNode(
        id=id, kind=kind, name=id, path=id if path is None else path, parent=parent, status=status
    )


def test_a_stop_outranks_a_failure_a_live_node_and_completed_ones() -> None:
    nodes = [
        _n("a", "completed"),
        _n("b", "running"),
        _n("c", "failed"),
        _n("d", "stopped"),
        _n("e", "pending"),
    ]
    assert matters_most(nodes) == "d"
    assert matters_most(nodes[:3]) == "c"
    assert matters_most(nodes[:2]) == "b"


def test_waiting_and_sleeping_count_as_where_it_is_now_first_in_plan_order() -> None:
    assert matters_most([_n("a", "completed"), _n("w", "waiting"), _n("s", "sleeping")]) == "w"


def test_a_quiet_execution_opens_on_the_last_node_it_completed() -> None:
    nodes = [_n("a", "completed"), _n("b", "won"), _n("c", "completed"), _n("d", "pending")]
    assert matters_most(nodes) == "c"


def test_the_failed_child_not_its_failed_subflow() -> None:
    nodes = [
        _n("pay", "failed", kind="subflow"),
        _n("order", "completed", parent="pay"),
        _n("charge", "failed", parent="pay"),
    ]
    assert matters_most(nodes) == "charge"


def test_gateways_and_unpainted_graphs_choose_nothing() -> None:
    assert matters_most([_n("fork", "completed", path=""), _n("a", "pending")]) == ""
    assert matters_most([_n("a", ""), _n("b", "")]) == ""


def test_an_answered_stop_ranks_as_the_stop_and_an_interrupted_node_as_where_it_was() -> None:
    assert matters_most([_n("a", "failed"), _n("b", "answered")]) == "b"
    assert matters_most([_n("a", "completed"), _n("b", "interrupted"), _n("c", "pending")]) == "b"
