"""A plain loop's iteration count: it writes no field per iteration, so its StepCompleted carries
`iterations`, and progress reads the count from the history, on a first run and on a replay alike."""

from __future__ import annotations

import asyncio

from flowdeck.engine import Loop
from flowdeck.engine.flow import Flow
from flowdeck.engine.progress import NodeStatus
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until, waiting_for


def _counter(state: int, ctx: object) -> object:
    return Loop.done(state) if state >= 3 else Loop.again(state + 1)


counting = Flow.init("counting").loop("count", _counter, initial=0, type=int).input("go", bool)


async def _loop_completions(store: spi.FlowStore, eid: str) -> list[dict[str, object]]:
    history = (await store.get_history(eid)).events
    return [
        dict(e.data)
        for e in history
        if e.kind is spi.EventKind.STEP_COMPLETED and e.data.get("step_name") == "count"
    ]


async def test_a_completed_loop_tells_its_iterations_and_a_replay_keeps_them(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [counting]) as engine:
        eid = await engine.workflows.start("counting", execution_id="e1")
        await until(store, eid, waiting_for("go"))
        # 0, 1, 2 answered again; 3 answered done: four runs of the body
        assert await _loop_completions(store, eid) == [{"step_name": "count", "iterations": 4}]
        entry = (await engine.executions.describe(eid)).progress.by_name("count")  # type: ignore[union-attr]
        assert (entry.status, entry.iterations, entry.detail) == (NodeStatus.COMPLETED, 4, "4 iterations")
        # The next attempt replays the loop from its recorded value: no new completion, the count stands.
        await engine.executions.signal(eid, "go", True)
        state = await until(store, eid)
        assert state.status == spi.Completed()
        assert (await store.get_field(eid, "count")).decode() == 3  # type: ignore[union-attr]
        assert await _loop_completions(store, eid) == [{"step_name": "count", "iterations": 4}]
        entry = (await engine.executions.describe(eid)).progress.by_name("count")  # type: ignore[union-attr]
        assert (entry.status, entry.iterations, entry.detail) == (NodeStatus.COMPLETED, 4, "4 iterations")


once = Flow.init("once").loop("poll", lambda ctx: Loop.done("ok"), type=str)


async def test_one_iteration_is_said_in_the_singular(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [once]) as engine:
        eid = await engine.workflows.start("once", execution_id="e1")
        await until(store, eid)
        entry = (await engine.executions.describe(eid)).progress.by_name("poll")  # type: ignore[union-attr]
    assert (entry.status, entry.iterations, entry.detail) == (NodeStatus.COMPLETED, 1, "1 iteration")


async def test_a_loop_in_flight_runs_with_no_count(store: spi.FlowStore, clock: ManualClock) -> None:
    """Its iterations so far are in no record: it is painted running, without a number."""
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow(state: int, ctx: object) -> object:
        if state == 2:
            entered.set()
            await release.wait()
            return Loop.done(state)
        return Loop.again(state + 1)

    flow = Flow.init("slow").loop("spin", slow, initial=0, type=int)
    async with make_engine(store, clock, [flow]) as engine:
        eid = await engine.workflows.start("slow", execution_id="e1")
        await asyncio.wait_for(entered.wait(), 10)
        entry = (await engine.executions.describe(eid)).progress.by_name("spin")  # type: ignore[union-attr]
        assert (entry.status, entry.iterations, entry.detail) == (NodeStatus.RUNNING, None, "")
        release.set()
        await until(store, eid)
        entry = (await engine.executions.describe(eid)).progress.by_name("spin")  # type: ignore[union-attr]
    assert (entry.status, entry.iterations, entry.detail) == (NodeStatus.COMPLETED, 3, "3 iterations")
