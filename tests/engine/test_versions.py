"""Versions: an execution belongs to the version it started under. A structural change parks in-flight
executions (held, never failed); registering the old version again recovers them; `resume` moves them to
the newest version after a dry run."""

from __future__ import annotations

import pytest

from examples import seed
from flowdeck.engine import errors, schema
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine, until, waiting_for

ORDER = seed.sample_order()
V1 = seed.awaiting_order
V2 = seed.awaiting_order.output("note", lambda ctx: f"v2 saw {ctx.total}", type=str)


async def _started_under_v1(store: spi.FlowStore, clock: ManualClock, count: int = 1) -> list[str]:
    async with make_engine(store, clock, [V1]) as old:
        ids = [await old.workflows.start("fulfilment", execution_id=f"old-{i}") for i in range(count)]
        for eid in ids:
            await until(store, eid, waiting_for("order"))
    return ids


async def test_a_structural_change_parks_and_the_old_version_recovers(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    (eid,) = await _started_under_v1(store, clock)
    async with make_engine(store, clock) as engine:
        h2 = await engine.register("fulfilment", V2)
        held = await store.get_execution(eid)
        assert await engine.parked("fulfilment") == [held]
        assert held.status == spi.Running()
        # a new execution runs on the new version beside the held one
        fresh = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        assert ((await until(store, fresh)).hash, (await store.get_field(fresh, "note")).decode()) == (
            h2,
            "v2 saw 1200",
        )
        # a signal to a held execution is refused, writing nothing: its version is not served here
        history = await store.get_history(eid)
        with pytest.raises(errors.FlowNotRegistered):
            await engine.executions.signal(eid, "order", ORDER.model_dump())
        assert await store.get_history(eid) == history

        h1 = await engine.register("fulfilment", V1)
        assert await engine.parked("fulfilment") == []
        await engine.executions.signal(eid, "order", ORDER.model_dump())
        state = await until(store, eid)
    assert (state.status, state.hash) == (spi.Completed(), h1)
    assert "note" not in await store.get_all_fields(eid)


async def test_cancel_all_reaches_parked_executions(store: spi.FlowStore, clock: ManualClock) -> None:
    ids = await _started_under_v1(store, clock, count=2)
    async with make_engine(store, clock, [V2]) as engine:
        assert len(await engine.parked("fulfilment")) == 2
        assert await engine.executions.cancel_all("fulfilment", reason="retired") == 2
        states = [await store.get_execution(eid) for eid in ids]
    assert [(s.cancel_requested, s.status) for s in states] == [(True, spi.Running())] * 2


async def test_resume_moves_a_parked_execution_to_the_newest_version(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    (eid,) = await _started_under_v1(store, clock)
    async with make_engine(store, clock, [V2]) as engine:
        h2 = (await engine.workflows.describe("fulfilment")).structural_hash
        before = await store.get_history(eid)
        report = await engine.resume(eid)
        assert (report.kept, report.next_node, report.conflicts) == ([], "order", [])
        assert await store.get_history(eid) == before  # a dry run writes nothing
        await engine.resume(eid, go=True, actor="ops@example.com")
        assert await engine.parked("fulfilment") == []
        await until(store, eid, waiting_for("order"))
        await engine.executions.signal(eid, "order", ORDER.model_dump())
        state = await until(store, eid)
    assert (state.status, state.hash) == (spi.Completed(), h2)
    assert (await store.get_field(eid, "note")).decode() == "v2 saw 1200"
    resumed = [e for e in (await store.get_history(eid)).events if e.kind == spi.EventKind.RESUMED]
    assert [dict(e.data) for e in resumed] == [
        {"from_hash": schema.structural_hash(V1), "to_hash": h2, "actor": "ops@example.com"}
    ]
