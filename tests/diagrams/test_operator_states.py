"""What an operator's action leaves on the diagram (issue 29, "actions show their result at once"): a stop a
person answered is painted `answered` until the execution resumes, and what a cancel or an end cut short
is painted `interrupted`, never `pending` as if it were still to come. Real executions on the MemoryStore,
read back through every format's real tool (tests/diagrams/painted.py)."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.engine import Flow
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.graph import build_graph
from flowdeck.engine.progress import NodeStatus, Progress
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.diagrams import painted
from tests.engine.engine_support import make_engine, until, waiting_for

C, P = NodeStatus.COMPLETED, NodeStatus.PENDING
ANSWERED, INTERRUPTED, STOPPED = NodeStatus.ANSWERED, NodeStatus.INTERRUPTED, NodeStatus.STOPPED
CARRIERS = {"NL": "PostNL"}


def ship(ctx: object) -> str:
    return CARRIERS[ctx.country]  # type: ignore[attr-defined]  # a mistake: Atlantis has no carrier


shipping = (
    Flow.init("shipping")
    .input("country", str)
    .output("ship", ship, type=str)
    .step("notify", lambda ctx: None)
)
gated = (
    Flow.init("gated")
    .input("go", bool)
    .and_then(
        Flow.race(
            Flow.init("gate").input("approval", bool).output("decision", lambda ctx: "by hand", type=str),
            Flow.init("gate")
            .sleep("grace", timedelta(hours=1))
            .output("decision", lambda ctx: "late", type=str),
        )
    )
    .step("after", lambda ctx: None)
)


def _statuses(progress: Progress) -> list[tuple[str, NodeStatus]]:
    return [(n.name, n.status) for n in progress.nodes]


async def _progress(engine: FlowEngine, eid: str) -> tuple[Flow, Progress]:
    detail = await engine.executions.describe(eid)
    flow = engine.flow_of(detail.state)
    assert flow is not None
    assert detail.progress is not None
    return flow, detail.progress


def _every_format_says(flow: Flow, progress: Progress) -> None:
    wanted = {n.place: n.status.value for n in progress.nodes}
    for fmt in painted.FORMATS:
        read = painted.read(fmt, flow, progress)
        assert {place: read[place].status for place in wanted} == wanted, fmt


async def test_an_answered_stop_is_painted_answered_until_the_execution_resumes() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [shipping]) as engine:
        eid = await engine.workflows.start("shipping", execution_id="s1", inputs={"country": "Atlantis"})
        await until(store, eid, lambda s: isinstance(s.status, spi.Stopped))
        assert _statuses((await _progress(engine, eid))[1]) == [
            ("country", C),
            ("ship", STOPPED),
            ("notify", P),
        ]
        before = await engine.resume(eid)  # the very version it stopped under, its stop unanswered
        assert before.repeats is not None
        assert before.repeats.code == "F0001"
        assert "the same mistake will stop it again" in before.warning
        await engine.answer(eid, "ship", "by hand", actor="olga")
        flow, progress = await _progress(engine, eid)
        assert _statuses(progress) == [("country", C), ("ship", ANSWERED), ("notify", P)]
        assert "answered" in (progress.by_name("ship") or progress.nodes[0]).detail
        _every_format_says(flow, progress)
        after = await engine.resume(eid)
        assert (after.repeats, after.warning, after.next_node) == (None, "", "notify")
        await engine.resume(eid, go=True, actor="olga")
        await until(store, eid)
        assert _statuses((await _progress(engine, eid))[1]) == [("country", C), ("ship", C), ("notify", C)]


async def test_what_a_cancel_cut_short_is_painted_interrupted_in_every_format() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [gated]) as engine:
        eid = await engine.workflows.start("gated", execution_id="g1", inputs={"go": True})
        await until(store, eid, waiting_for("approval", "grace"))
        await engine.executions.cancel(eid, "no longer wanted")
        await until(store, eid)
        flow, progress = await _progress(engine, eid)
        assert _statuses(progress) == [
            ("go", C),
            ("approval", INTERRUPTED),  # both arms were under way: neither is pending, nor lost
            ("decision", P),
            ("grace", INTERRUPTED),
            ("decision", P),
            ("after", P),
        ]
        _every_format_says(flow, progress)
        drawn = painted.read("json", flow, progress)
        fork = next(n.id for n in build_graph(flow).nodes if n.kind == "race-fork")
        assert drawn[fork].status == "interrupted"


async def test_an_operators_end_interrupts_the_node_that_was_waiting() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [gated]) as engine:
        eid = await engine.workflows.start("gated", execution_id="g2")
        await until(store, eid, waiting_for("go"))
        await engine.end(eid, "done by hand", actor="olga")
        flow, progress = await _progress(engine, eid)
        assert _statuses(progress)[:2] == [("go", INTERRUPTED), ("approval", P)]
        _every_format_says(flow, progress)
