"""The fulfilment approval race painted per place: three `decision` arms share one durable name, and each
keeps its own state in every format, in the demo's waiting, approved and stopped states (real executions on
the MemoryStore; the stopped state is the approved record with the demo's stop at `ship`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from flowdeck.engine import Flow, FlowDomainError
from flowdeck.engine.graph import build_graph
from flowdeck.engine.progress import NodeStatus, Progress, build_progress
from flowdeck.engine.render import render
from flowdeck.engine.render.bpmn import NS
from flowdeck.engine.render.common import COLOURS
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.diagrams import tools
from tests.engine.engine_support import make_engine, until, waiting_for

C, W, S, P = NodeStatus.COMPLETED, NodeStatus.WAITING, NodeStatus.SLEEPING, NodeStatus.PENDING
WON, LOST, STOPPED = NodeStatus.WON, NodeStatus.LOST, NodeStatus.STOPPED
LARGE = 100_000
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "race-painting"


class NeedsApproval(FlowDomainError):
    """Too large to approve automatically."""


def auto(ctx: object) -> str:
    total: int = ctx.total  # type: ignore[attr-defined]
    if total > LARGE:
        raise NeedsApproval(f"total {total} cents is over {LARGE}: a person decides")
    return "auto-approved"


# The shape of examples/fulfilment/flows.py's approval, without its database ledger.
approval = Flow.race(
    Flow.init("approval").output("decision", auto, type=str),
    Flow.race(
        Flow.init("approval")
        .input("approval", bool)
        .output("decision", lambda ctx: "approved" if ctx.approval else "declined", type=str),
        Flow.init("approval")
        .sleep("grace", timedelta(hours=24))
        .output("decision", lambda ctx: "timed-out", type=str),
    ),
)
order = Flow.init("orders").input("total", int).and_then(approval).step("ship", lambda ctx: None)


def placed(progress: Progress) -> list[tuple[str, NodeStatus]]:
    return [(n.name, n.status) for n in progress.nodes]


async def _progress(total: int, approve: bool) -> Progress:
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [order]) as engine:
        eid = await engine.workflows.start("orders", execution_id="e1", inputs={"total": total})
        if total > LARGE:
            await until(store, eid, waiting_for("approval", "grace"))
        if approve:
            await engine.executions.signal(eid, "approval", True)
        if approve or total <= LARGE:
            await until(store, eid)
        detail = await engine.executions.describe(eid)
        assert detail.progress is not None
        return detail.progress


WAITING = [
    ("total", C),
    ("decision", LOST),  # auto refused while a person can still decide: lost, not failed
    ("approval", W),
    ("decision", P),
    ("grace", S),
    ("decision", P),
    ("ship", P),
]
APPROVED = [
    ("total", C),
    ("decision", LOST),
    ("approval", WON),
    ("decision", WON),
    ("grace", LOST),
    ("decision", LOST),
    ("ship", C),
]
SMALL = [
    ("total", C),
    ("decision", WON),
    ("approval", LOST),
    ("decision", LOST),
    ("grace", LOST),
    ("decision", LOST),
    ("ship", C),
]


async def test_a_waiting_large_order_paints_each_arm_on_its_own() -> None:
    progress = await _progress(250_000, approve=False)
    assert placed(progress) == WAITING
    refused = progress.nodes[1]
    assert refused.detail == f"total 250000 cents is over {LARGE}: a person decides"
    assert len({n.place for n in progress.nodes}) == len(progress.nodes)


async def test_an_approved_order_marks_the_person_won_and_the_rest_lost() -> None:
    assert placed(await _progress(250_000, approve=True)) == APPROVED


async def test_a_small_order_is_won_by_the_automatic_arm() -> None:
    assert placed(await _progress(10, approve=False)) == SMALL


async def test_each_decision_place_owns_only_the_record_its_arm_wrote() -> None:
    """The three `decision` places share a durable path, so the record under it (attempts, value, wait)
    belongs to the place whose facts it carries: the refused automatic decision its failure, the person's
    decision its value; the timed-out arm's decision, which never ran, none. Unshared places own theirs."""

    def owners(progress: Progress) -> list[tuple[str, bool, bool]]:
        return [(n.name, n.shared, n.recorded) for n in progress.nodes if n.name in ("decision", "total")]

    waiting = await _progress(250_000, approve=False)
    assert owners(waiting) == [
        ("total", False, True),
        ("decision", True, True),
        ("decision", True, False),
        ("decision", True, False),
    ]
    approved = await _progress(250_000, approve=True)
    assert [n.recorded for n in approved.nodes if n.name == "decision"] == [True, True, False]
    small = await _progress(10, approve=False)
    assert [n.recorded for n in small.nodes if n.name == "decision"] == [True, False, False]


def _stopped(progress: Progress) -> Progress:
    """The demo's stopped order: its race decided, stopped at `ship` (what build_progress paints for a
    Stopped status is checked in test_progress.py; here the painting of that row in every format)."""
    nodes = tuple(
        replace(n, status=STOPPED, detail="F0001: no carrier ships to Atlantis") if n.name == "ship" else n
        for n in progress.nodes
    )
    return Progress(nodes)


async def _states() -> dict[str, Progress]:
    small = await _progress(10, approve=False)
    return {
        "waiting": await _progress(250_000, approve=False),
        "approved": await _progress(250_000, approve=True),
        "stopped": _stopped(small),
    }


def _expected(progress: Progress) -> dict[str, str]:
    return {n.place: n.status.value for n in progress.nodes}


async def test_every_format_paints_each_place_and_the_real_tools_accept_it() -> None:
    states = await _states()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dots = {name: render(order, "dot", p) for name, p in states.items()}
    for (name, progress), (ok, svg, err) in zip(states.items(), tools.dot(list(dots.values())), strict=True):
        assert ok, err
        (ARTIFACTS / f"{name}.svg").write_text(svg)
        root = ET.fromstring(svg.encode())
        groups = {g.get("id"): g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id")}
        for place, status in _expected(progress).items():
            polygon = next(e for e in groups[f"fd-{place}"] if e.get("fill"))
            assert polygon.get("fill", "").upper() == COLOURS[status].upper(), (name, place)
        assert "legend" not in svg.lower()
    mermaids = [render(order, "mermaid", p) for p in states.values()]
    for text, result, progress in zip(mermaids, tools.mermaid(mermaids), states.values(), strict=True):
        assert result["ok"], result
        assert "legend" not in text
        for place, status in _expected(progress).items():
            assert f"style {place} fill:{COLOURS[status]}," in text
    bpmns = [render(order, "bpmn", p) for p in states.values()]
    for text, result, progress in zip(bpmns, tools.bpmn(bpmns), states.values(), strict=True):
        assert result["ok"], result
        shapes = ET.fromstring(text.encode()).iter(f"{{{NS['bpmndi']}}}BPMNShape")
        fills = {s.get("bpmnElement"): s.get(f"{{{NS['color']}}}background-color") for s in shapes}
        assert {p: fills[p] for p in _expected(progress)} == {
            p: COLOURS[s] for p, s in _expected(progress).items()
        }
    elks = [render(order, "elk", p) for p in states.values()]
    for text, result, progress in zip(elks, tools.elk(elks), states.values(), strict=True):
        assert result["ok"], result
        children = {c["id"]: c["properties"]["status"] for c in json.loads(text)["children"]}
        assert {p: children[p] for p in _expected(progress)} == _expected(progress)
    for progress in states.values():
        data = json.loads(render(order, "json", progress))
        by_id = {n["id"]: n for n in data["nodes"]}
        for entry in progress.nodes:
            node = by_id[entry.place]
            assert (node["path"], node["kind"], node["status"]) == (
                entry.name,
                entry.node_type,
                entry.status.value,
            )


def test_the_graph_ids_are_the_places() -> None:
    row = spi.ExecutionState("e1", "orders", spi.Running(), None, None, "h", T0, T0, {}, False, None)
    named = [n.id for n in build_graph(order).nodes if n.path and n.kind != "branch"]
    assert [n.place for n in build_progress(order, row, {}, []).nodes] == named


def test_bpmn_and_elk_draw_a_race_as_a_race_with_its_arms_in_plan_order() -> None:
    """BPMN draws a race as the spec maps it: an event-based split named "race" (a parallel (+) split would
    say every branch is awaited) and an exclusive merge; ELK keeps the branches top to bottom in plan
    order, as Mermaid and DOT draw them, and gives the gateways room for their word."""
    drawn = build_graph(order).nodes
    forks = [n.id for n in drawn if n.kind == "race-fork"]
    joins = [n.id for n in drawn if n.kind == "race-join"]
    bpmn = ET.fromstring(render(order, "bpmn").encode())
    tags = {e.get("id"): (e.tag.split("}")[1], e.get("name")) for e in bpmn.iter() if e.get("id")}
    assert {tags[f] for f in forks} == {("eventBasedGateway", "race")}
    assert {tags[j][0] for j in joins} == {"exclusiveGateway"}
    text = render(order, "elk")
    (result,) = tools.elk([text])
    assert result["ok"], result
    placed = result["placed"]
    outer_arm_1 = next(n.id for n in drawn if n.path == "decision")  # the automatic decision
    approval = next(n.id for n in drawn if n.path == "approval")
    grace = next(n.id for n in drawn if n.path == "grace")
    assert placed[outer_arm_1]["y"] < placed[forks[1]]["y"]  # outer race: branch 1 above the inner race
    assert placed[approval]["y"] < placed[grace]["y"]  # inner race: the person above the grace period
    sizes = {c["id"]: (c["width"], c["height"]) for c in json.loads(text)["children"]}
    assert {sizes[g] for g in forks + joins} == {(48, 48)}
