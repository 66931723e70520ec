"""Progress as the engine describes it: real executions on the MemoryStore, painted on their diagrams."""

from __future__ import annotations

import json
from datetime import timedelta

from examples import seed
from flowdeck.engine.progress import NodeStatus
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import make_engine, until, waiting_for

C, R, P, W, S, F = (
    NodeStatus.COMPLETED,
    NodeStatus.RUNNING,
    NodeStatus.PENDING,
    NodeStatus.WAITING,
    NodeStatus.SLEEPING,
    NodeStatus.FAILED,
)
ORDER = seed.sample_order()


def _statuses(detail: object) -> dict[str, NodeStatus]:
    return {n.name: n.status for n in detail.progress.nodes}  # type: ignore[attr-defined]


def _painted(diagram: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in json.loads(diagram)["nodes"]:
        if "path" in node and node["type"] != "branch":
            found.setdefault(node["path"], node["status"])
    return found


async def test_a_sleeping_execution_then_its_completion() -> None:
    seed.reset()
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [seed.cooling]) as engine:
        eid = await engine.workflows.start("fulfilment", execution_id="e1", inputs={"order": ORDER})
        await until(store, eid, waiting_for("delivery-window"))
        detail = await engine.executions.describe(eid)
        expected = {"order": C, "ship": C, "delivery-window": S, "ask-for-review": P}
        assert _statuses(detail) == expected
        assert detail.progress.by_name("delivery-window").until == clock.now() + timedelta(hours=48)
        diagram = await engine.executions.diagram(eid, "json")
        assert _painted(diagram) == {k: v.value for k, v in expected.items()}
        await clock.advance(48 * 3600)
        await until(store, eid)
        detail = await engine.executions.describe(eid)
    assert _statuses(detail) == dict.fromkeys(expected, C)
    assert detail.progress.completed_count == detail.progress.total_count == 4


async def test_waiting_for_a_race_of_an_input_and_a_deadline() -> None:
    seed.reset()
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [seed.decided]) as engine:
        eid = await engine.workflows.start("approval", execution_id="e1")
        await until(store, eid, waiting_for("approval", "grace"))
        detail = await engine.executions.describe(eid)
        assert _statuses(detail) == {"approval": W, "decision": P, "grace": S}
        mermaid = await engine.executions.diagram(eid, "mermaid")
    assert "fill:#87CEEB" in mermaid  # waiting: sky blue
    assert "fill:#DDA0DD" in mermaid  # sleeping: plum


async def test_a_subflow_execution_lists_its_children() -> None:
    seed.reset()
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [seed.with_payment]) as engine:
        eid = await engine.workflows.start("fulfilment", execution_id="e1", inputs={"order": ORDER})
        state = await until(store, eid)
        detail = await engine.executions.describe(eid)
    assert state.status == spi.Completed()
    assert _statuses(detail) == {
        "order": C,
        "total": C,
        "payment": C,
        "payment~order_id": C,
        "payment~amount_cents": C,
        "payment~charge_id": C,
        "ship": C,
    }


async def test_a_failed_saga_shows_the_failure_and_what_was_undone() -> None:
    seed.reset()
    seed.fail_next("charge", seed.CardDeclined("card declined"))
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [seed.saga]) as engine:
        eid = await engine.workflows.start("fulfilment", execution_id="e1", inputs={"order": ORDER})
        state = await until(store, eid)
        detail = await engine.executions.describe(eid)
        dot = await engine.executions.diagram(eid, "dot")
    assert isinstance(state.status, spi.Failed)
    assert _statuses(detail) == {
        "order": C,
        "total": C,
        "reservations": NodeStatus.COMPENSATED,
        "charge": F,
        "ship": P,
    }
    assert detail.progress.by_name("charge").detail == "card declined"
    assert 'fillcolor="#FF6B6B"' in dot  # failed: red
