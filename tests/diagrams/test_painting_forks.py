"""Zip, gather and dispatch painted per place in every format, read back by the real tools
(tests/diagrams/painted.py): real executions on the MemoryStore, each branch's nodes keeping their own
state; a dispatch's chosen arm painted and the other not; a dispatch no arm applies to stopped with its
stop code."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowdeck.engine import Flow
from flowdeck.engine.graph import build_graph
from flowdeck.engine.progress import NodeStatus, Progress
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.diagrams import painted
from tests.diagrams.painted import FORMATS
from tests.engine.engine_support import make_engine, until, waiting_for

C, R, P, W, S = (
    NodeStatus.COMPLETED,
    NodeStatus.RUNNING,
    NodeStatus.PENDING,
    NodeStatus.WAITING,
    NodeStatus.SLEEPING,
)


def _none(ctx: object) -> None:
    return None


async def _run(flow: Flow, *, waits: tuple[str, ...] = (), stopped: bool = False) -> Progress:
    """Start `flow` and describe it once it waits on exactly `waits`, stopped, or ended."""
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [flow]) as engine:
        eid = await engine.workflows.start(flow.name, execution_id="e1")
        if waits:
            await until(store, eid, waiting_for(*waits))
        elif stopped:
            await until(store, eid, lambda s: isinstance(s.status, spi.Stopped))
        else:
            await until(store, eid)
        detail = await engine.executions.describe(eid)
    assert detail.progress is not None
    return detail.progress


# ------------------------------------------------------------------------------------------------ zip

zipped = (
    Flow.init("zipped")
    .step("left", _none)
    .zip(Flow.init("b").input("ready", bool).output("right", lambda ctx: 1, type=int))
    .step("after", _none)
)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_zip_paints_each_branch_on_its_own(format: str) -> None:
    progress = await _run(zipped, waits=("ready",))
    painted.check(
        format,
        zipped,
        progress,
        {
            "left": (C, "left", "completed"),
            "ready": (W, "ready", "waiting"),
            "right": (P, "right", "pending"),
            "after": (P, "after", "pending"),
        },
    )


shared = (
    Flow.init("shared")
    .input("order", int)
    .output("lines", lambda ctx: ctx.order * 2, type=int)
    .zip(Flow.init("b").input("order", int).sleep("cool", timedelta(hours=1)).step("right", _none))
)


def _ids(flow: Flow, path: str) -> list[str]:
    return [n.id for n in build_graph(flow).nodes if n.path == path]


@pytest.mark.parametrize("format", FORMATS)
async def test_two_places_of_one_input_in_a_zip_each_carry_their_state(format: str) -> None:
    """Both branches declare `order`: one delivery serves both places, and each is painted at its own id,
    while each branch goes on as far as it has come."""
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [shared]) as engine:
        await engine.workflows.start("shared", execution_id="e1")
        await until(store, "e1", waiting_for("order"))
        waiting = (await engine.executions.describe("e1")).progress
        await engine.executions.signal("e1", "order", 21)
        await until(store, "e1", waiting_for("cool"))
        cooling = (await engine.executions.describe("e1")).progress
    assert waiting is not None
    assert cooling is not None
    orders = _ids(shared, "order")
    assert len(orders) == 2
    before = painted.read(format, shared, waiting)
    assert [before[p].status for p in orders] == [W, W]
    after = painted.read(format, shared, cooling)
    assert [after[p].status for p in orders] == [C, C]
    [lines], [cool], [right] = (_ids(shared, p) for p in ("lines", "cool", "right"))
    assert (after[lines].status, after[cool].status, after[right].status) == (C, S, P)
    assert [n.place for n in cooling.nodes if n.name == "order"] == orders


# --------------------------------------------------------------------------------------------- gather

gathered = Flow.gather(
    Flow.init("g1").step("quick", _none),
    Flow.init("g2").input("answer", str),
    Flow.init("g3").sleep("nap", timedelta(hours=2)).step("woken", _none),
).step("after", _none)
gathered = Flow.init("gathered").and_then(gathered)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_gather_paints_each_of_its_three_branches(format: str) -> None:
    progress = await _run(gathered, waits=("answer", "nap"))
    got = painted.check(
        format,
        gathered,
        progress,
        {
            "quick": (C, "quick", "completed"),
            "answer": (W, "answer", "waiting"),
            "nap": (S, "nap"),
            "woken": (P, "woken", "pending"),
            "after": (P, "after", "pending"),
        },
    )
    nap = got[painted.places(gathered)["nap"]]
    if format != "bpmn":  # BPMN's documentation holds the progress lines alone, after the title
        assert "sleep 2h" in nap.lines
    assert any(line.startswith("sleeping until 2") and line.endswith(" UTC") for line in nap.lines)


# ------------------------------------------------------------------------------------------- dispatch

routed = (
    Flow.init("routed")
    .output("total", lambda ctx: 250, type=int)
    .dispatch("route", type=str)
    .when(lambda ctx: ctx.total > 100, lambda ctx: "courier", name="big")
    .otherwise(lambda ctx: "post", name="small")
    .step("after", _none)
)


def _arms(flow: Flow) -> dict[str, str]:
    return {n.name: n.id for n in build_graph(flow).nodes if n.kind == "branch"}


@pytest.mark.parametrize("format", FORMATS)
async def test_a_dispatch_paints_its_chosen_arm(format: str) -> None:
    progress = await _run(routed)
    assert progress.by_name("route").detail == "big"  # type: ignore[union-attr]
    got = painted.check(
        format,
        routed,
        progress,
        {"total": (C, "total"), "route": (C, "route", "completed"), "after": (C, "after")},
    )
    arms = _arms(routed)
    assert (got[arms["big"]].status, got[arms["small"]].status) == (C, P)


# --------------------------------------------------------------------------------------------- a stop


def _no_carrier(ctx: object) -> None:
    raise LookupError("no carrier ships to Atlantis")


stranded = (
    Flow.init("stranded")
    .output("total", lambda ctx: 5, type=int)
    .dispatch("route", type=str)
    .when(lambda ctx: ctx.total > 100, lambda ctx: "courier", name="big")
    .otherwise(lambda ctx: "post", name="small")
    .step("ship", _no_carrier)
    .step("after", _none)
)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_mistake_stops_its_node_with_the_stop_code(format: str) -> None:
    progress = await _run(stranded, stopped=True)
    stop = progress.by_name("ship")
    assert stop is not None
    reason = "F0001: LookupError: no carrier ships to Atlantis"
    assert (stop.status, stop.detail) == (NodeStatus.STOPPED, reason)
    got = painted.check(
        format,
        stranded,
        progress,
        {
            "total": (C, "total", "completed"),
            "route": (C, "route", "completed"),
            # the label cuts the reason (common.DETAIL_CHARS); the code leads it
            "ship": (NodeStatus.STOPPED, "ship", "stopped", "F0001: LookupError: no carrier ships to…"),
            "after": (P, "after", "pending"),
        },
    )
    arms = _arms(stranded)
    assert (got[arms["big"]].status, got[arms["small"]].status) == (P, C)
    if format == "json":
        wire = painted.wire_progress(progress)[painted.places(stranded)["ship"]]
        assert (wire.status, wire.detail) == ("stopped", stop.detail)
