"""What only the in-memory store promises: its inspectable state, `reset()`, and wake-ups across threads."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.conformance.support import SERVED, WF1, StoreFixture
from flowdeck.store.memory import MemoryStore


def fixture() -> StoreFixture:
    clock = ManualClock()
    return StoreFixture(MemoryStore(clock), clock)


async def test_state_is_inspectable() -> None:
    fx = fixture()
    store = fx.store
    assert isinstance(store, MemoryStore)
    await fx.mk_execution("e1", fields={"order": spi.FieldData.of(7, "int")})
    handle = await fx.claim("e1")
    await handle.record_progress("ship", None, fx.step_completed("e1", "ship"))
    assert list(store.executions) == ["e1"]
    assert store.data.fields == {"e1": {"order": spi.FieldData.of(7, "int")}}
    assert store.data.progress == {"e1": {"ship"}}
    assert [(e.kind, e.seq) for e in store.history("e1")] == [
        (spi.EventKind.CREATED, 1),
        (spi.EventKind.STEP_COMPLETED, 2),
    ]
    assert store.data.next_token == 2


async def test_reset_forgets_everything_and_answers_blocked_polls() -> None:
    fx = fixture()
    store = fx.store
    assert isinstance(store, MemoryStore)
    await fx.mk_execution("e1")
    await store.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="h"))
    poll = fx.start_poll(served=frozenset({("wf2", "")}), timeout=timedelta(hours=1))
    await fx.blocked()
    store.reset()
    assert await asyncio.wait_for(poll, 10) == []
    assert store.executions == {}
    assert await store.list_workflows() == []
    assert await store.get_execution("e1") is None


async def test_a_write_from_another_thread_wakes_a_poll() -> None:
    fx = fixture()
    poll = fx.start_poll(served=SERVED, timeout=timedelta(hours=1))
    await fx.blocked()
    created = fx.created("e1")

    def create_elsewhere() -> bool:
        return asyncio.run(fx.store.create_execution_if_absent("e1", WF1, "", spi.Running(), created))

    assert await asyncio.to_thread(create_elsewhere) is True
    assert fx.ids(await asyncio.wait_for(poll, 10)) == {"e1"}


async def test_the_system_clock_is_the_default() -> None:
    store = MemoryStore()
    answer = await store.claim_ready(SERVED, "x", timedelta(seconds=30), 1, timedelta(milliseconds=5))
    assert list(answer) == []


async def test_a_manual_sleep_counts_from_the_call_not_from_its_first_run() -> None:
    """A poll computes its remaining time, hands `clock.sleep` to `ensure_future` and waits: an `advance`
    landing before that task first runs must still wake it (it once slept 30 s past the advanced time)."""
    clock = ManualClock()
    sleeper = asyncio.ensure_future(clock.sleep(30))
    await clock.advance(30)  # the sleeper's task has not run yet
    assert sleeper.done()


async def test_a_poll_sees_an_advance_that_lands_before_its_sleep_starts() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    poll = asyncio.ensure_future(
        store.claim_ready(SERVED, "x", timedelta(seconds=30), 1, timedelta(seconds=30))
    )
    await asyncio.sleep(0)  # the poll asks, finds nothing, and hands its sleep over, not yet started
    await clock.advance(31)
    assert await asyncio.wait_for(poll, 5) == []
