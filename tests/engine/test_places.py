"""Each drawn node's place in its plan in words: nodes that share a durable name (a race's arms) are told
apart by the branches leading to them; parallels are numbered per kind, in plan order."""

from __future__ import annotations

from datetime import UTC, datetime

from examples.fulfilment.flows import fulfilment
from flowdeck.engine import Flow, graph, places
from flowdeck.engine.progress import build_progress
from flowdeck.store import spi


def _by_path(flow: Flow) -> list[tuple[str, str]]:
    words = places.branch_words(flow)
    drawn = graph.build_graph(flow).nodes
    return [(n.path, words[n.id]) for n in drawn if n.id in words]


def test_the_fulfilment_races_arms_are_told_apart() -> None:
    shown = _by_path(fulfilment)
    assert [w for path, w in shown if path == "decision"] == [
        "race 1 branch 1",
        "race 1 branch 2 › race 2 branch 1",
        "race 1 branch 2 › race 2 branch 2",
    ]
    assert dict(shown)["grace"] == "race 1 branch 2 › race 2 branch 2"
    assert {w for path, w in shown if path in ("order", "ship", "payment", "payment~charge_id")} == {""}


def test_parallels_are_numbered_per_kind() -> None:
    a = Flow.init("a").output("x", lambda ctx: 1, type=int)
    b = Flow.init("b").output("y", lambda ctx: 2, type=int)
    flow = (
        Flow.init("f")
        .and_then(a.zip(b))
        .and_then(
            Flow.race(Flow.init("r").output("d", lambda ctx: 1), Flow.init("r").output("d", lambda ctx: 2))
        )
        .and_then(
            Flow.gather(Flow.init("g").output("p", lambda ctx: 1), Flow.init("g").output("q", lambda ctx: 1))
        )
    )
    assert _by_path(flow) == [
        ("x", "zip 1 branch 1"),
        ("y", "zip 1 branch 2"),
        ("d", "race 1 branch 1"),
        ("d", "race 1 branch 2"),
        ("p", "gather 1 branch 1"),
        ("q", "gather 1 branch 2"),
    ]


def test_the_words_are_keyed_as_progress_names_its_places() -> None:
    now = datetime.now(UTC)
    state = spi.ExecutionState("e", "fulfilment", spi.Running(), None, None, "h", now, now, {}, False, None)
    progress = build_progress(fulfilment, state, {}, [])
    words = places.branch_words(fulfilment)
    assert {n.place for n in progress.nodes} == set(words)


def test_a_key_names_a_path_a_place_of_it_or_a_gateway() -> None:
    drawn = graph.build_graph(fulfilment).nodes
    decisions = [n.id for n in drawn if n.path == "decision"]
    forks = [n.id for n in drawn if n.kind == "race-fork"]
    joins = [n.id for n in drawn if n.kind == "race-join"]
    approval = next(n.id for n in drawn if n.path == "approval")
    assert places.select(fulfilment, "decision") == places.Selection("decision")
    assert places.select(fulfilment, f"decision@{decisions[1]}") == places.Selection("decision", decisions[1])
    assert places.select(fulfilment, f"@{forks[0]}") == places.Selection("", forks[0])
    assert places.select(fulfilment, f"@{joins[1]}") == places.Selection("", joins[1])
    # a place that carries another path, a named node as a gateway, nothing drawn there: no node
    for key in (f"decision@{approval}", f"@{approval}", "decision@n999", "@", "nope"):
        assert places.select(fulfilment, key) is None, key


def test_a_node_named_with_an_at_sign_is_its_path() -> None:
    flow = Flow.init("f").output("a@n1", lambda ctx: 1, type=int)
    assert places.select(flow, "a@n1") == places.Selection("a@n1")


def test_a_gateway_knows_its_arms_from_its_fork_or_its_join() -> None:
    drawn = graph.build_graph(fulfilment).nodes
    ids = {n.id: n for n in drawn}
    forks = [n.id for n in drawn if n.kind == "race-fork"]
    joins = [n.id for n in drawn if n.kind == "race-join"]
    outer, inner = places.gateway(fulfilment, forks[0]), places.gateway(fulfilment, joins[1])
    assert outer is not None
    assert inner is not None
    assert (outer.kind, outer.ordinal, inner.ordinal) == ("race", 1, 2)
    assert places.gateway(fulfilment, joins[0]) == outer
    assert [[ids[p].path for p in arm] for arm in outer.arms] == [
        ["decision"],
        ["approval", "decision", "grace", "decision"],
    ]
    assert [[ids[p].path for p in arm] for arm in inner.arms] == [
        ["approval", "decision"],
        ["grace", "decision"],
    ]
    assert places.gateway(fulfilment, next(n.id for n in drawn if n.path == "ship")) is None
