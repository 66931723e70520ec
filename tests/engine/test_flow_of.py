"""`FlowEngine.flow_of`: the definition an execution runs under, or None when this engine does not serve
its version (the execution is parked here)."""

from __future__ import annotations

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import make_engine
from tests.engine.test_versions import V1, V2, _started_under_v1


async def test_flow_of_answers_the_served_version_or_none(store: spi.FlowStore, clock: ManualClock) -> None:
    (eid,) = await _started_under_v1(store, clock)
    state = await store.get_execution(eid)
    async with make_engine(store, clock, [V2]) as engine:
        assert engine.flow_of(state) is None
        await engine.register("fulfilment", V1)
        assert engine.flow_of(state) is V1
