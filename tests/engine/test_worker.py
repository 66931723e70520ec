"""Workers: claiming, lease renewal, a lost claim stopping its body, poll failures in health, batches,
and what leaving the engine does to attempts still running."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from engine.flow import Flow
from store import spi
from store.clock import ManualClock, settle
from store.memory import MemoryStore
from tests.engine.engine_support import LEASE, POLL, RENEW, advance, kinds, make_engine, unclaimed, until


@pytest.fixture
def store(memory_store: MemoryStore) -> MemoryStore:
    """These cases time the workers in loop turns (`settle()`), which only the memory store keeps up with;
    the engine's behaviour on PostgreSQL is covered by the other engine test modules."""
    return memory_store


class Gate:
    """An async body that blocks until opened, remembering each call and each cancellation."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.entered = asyncio.Event()
        self.calls = 0
        self.cancelled = 0

    async def __call__(self, ctx: object) -> str:
        self.calls += 1
        self.entered.set()
        try:
            await self.opened.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "done"


def gated(gate: Gate) -> Flow:
    return (
        Flow.init("gated")
        .output("slow", gate, type=str)
        .output("after", lambda ctx: ctx.slow + "!", type=str)
    )


async def test_health_reports_workers_and_claims(store: spi.FlowStore, clock: ManualClock) -> None:
    gate = Gate()
    engine = make_engine(store, clock, [gated(gate)], workers=2)
    assert engine.health().workers_alive == 0
    async with engine:
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        health = engine.health()
        assert (health.workers_alive, health.workers_configured, health.is_healthy) == (2, 2, True)
        assert (health.claims_held, health.executor_id) == ((eid,), engine.executor_id)
        assert (health.poll_failures, health.last_poll_failure) == (0, None)
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()
        await settle()
        assert engine.health().claims_held == ()
    assert engine.health().workers_alive == 0


async def test_claims_and_outcomes_are_logged(
    store: spi.FlowStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="engine.worker")
    async with make_engine(store, clock, [Flow.init("quick").output("x", lambda ctx: 1, type=int)]) as engine:
        eid = await engine.workflows.start("quick")
        await until(store, eid)
        await settle()
    actions = [
        (r.action, getattr(r, "execution_id", None)) for r in caplog.records if r.name == "engine.worker"
    ]
    assert ("claim", eid) in actions
    assert ("attempt_done", eid) in actions
    assert (actions[0][0], actions[-1][0]) == ("start_workers", "stop_workers")


async def test_renewal_keeps_a_long_attempt_claimed(store: spi.FlowStore, clock: ManualClock) -> None:
    gate = Gate()
    async with (
        make_engine(store, clock, [gated(gate)]) as engine,
        make_engine(store, clock, [gated(gate)]) as other,
    ):
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        for _ in range(10):  # 100 seconds, more than three leases
            await clock.advance(RENEW)
            state = await store.get_execution(eid)
            assert (state.executor, state.claim_expiry) == (engine.executor_id, clock.now() + LEASE)
        assert other.health().claims_held == ()
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()
    assert gate.calls == 1
    assert (await kinds(store, eid)).count("ExecutionClaimed") == 1


async def test_a_lost_claim_stops_the_body(store: spi.FlowStore, clock: ManualClock) -> None:
    gate = Gate()
    async with make_engine(store, clock, [gated(gate)]) as first:
        eid = await first.workflows.start("gated")
        await gate.entered.wait()
        # The wall clock jumps past the lease with no renewal due on the monotonic clock: the claim lapses.
        clock.step_wall(LEASE + timedelta(seconds=1))
        async with make_engine(store, clock, [gated(gate)]) as second:
            # the second engine claims the lapsed row and runs the body again
            await until(store, eid, lambda s: s.executor == second.executor_id and gate.calls == 2)
            await clock.advance(RENEW)  # the first engine's renewal is refused: its body is cancelled
            await settle()
            assert (gate.cancelled, first.health().claims_held) == (1, ())
            gate.opened.set()
            assert (await until(store, eid)).status == spi.Completed()
    assert (await store.get_field(eid, "after")).decode() == "done!"


class FlakyStore(MemoryStore):
    """A real memory store whose next `failures` polls fail, as a store behind a dropped connection does."""

    def __init__(self, clock: ManualClock, failures: int) -> None:
        super().__init__(clock)
        self.failures = failures

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        if self.failures:
            self.failures -= 1
            raise spi.FlowStoreError("database went away", retryable=True)
        return await super().claim_ready(*args, **kwargs)  # type: ignore[arg-type]


async def test_poll_failures_are_counted_and_polling_goes_on(clock: ManualClock) -> None:
    store = FlakyStore(clock, failures=2)
    flow = Flow.init("quick").output("x", lambda ctx: 1, type=int)
    async with make_engine(store, clock, [flow]) as engine:
        await settle()
        failed_at = clock.now()
        health = engine.health()
        assert (health.poll_failures, health.last_poll_failure) == (1, "FlowStoreError: database went away")
        assert (health.last_poll_failure_at, health.is_healthy) == (failed_at, True)
        await advance(clock, POLL)  # the pause after a failure is on the clock
        assert engine.health().poll_failures == 2
        await advance(clock, POLL)
        eid = await engine.workflows.start("quick")
        assert (await until(store, eid)).status == spi.Completed()
        assert (engine.health().poll_failures, engine.health().workers_alive) == (2, 1)


async def test_batch_members_run_concurrently(store: spi.FlowStore, clock: ManualClock) -> None:
    arrived: list[str] = []
    all_there = asyncio.Event()

    async def meet(ctx: object) -> int:
        arrived.append(ctx.execution_id)  # type: ignore[attr-defined]
        if len(arrived) == 3:
            all_there.set()
        await all_there.wait()  # only returns if all three run at once
        return len(arrived)

    flow = Flow.init("meet").output("n", meet, type=int)
    engine = make_engine(store, clock, workers=1, batch_size=3)
    await engine.register("meet", flow)
    ids = [await engine.workflows.start("meet") for _ in range(3)]
    async with engine:
        for eid in ids:
            assert (await until(store, eid)).status == spi.Completed()
    assert sorted(arrived) == sorted(ids)


async def test_leaving_cancels_running_attempts_and_their_claims_lapse(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    gate = Gate()
    async with make_engine(store, clock, [gated(gate)]) as first:
        eid = await first.workflows.start("gated")
        await gate.entered.wait()
    held = await store.get_execution(eid)
    assert (gate.cancelled, held.executor, held.status) == (1, first.executor_id, spi.Running())
    assert "ExecutionReleased" not in await kinds(store, eid)
    gate.opened.set()
    async with make_engine(store, clock, [gated(gate)]) as second:
        await settle()
        assert (await store.get_execution(eid)).executor == first.executor_id  # not before the lease ends
        await advance(clock, LEASE)
        assert (await until(store, eid)).status == spi.Completed()
        assert (await store.get_execution(eid)).executor is None
    assert second.health().claims_held == ()


async def test_leaving_lets_attempts_finish_within_the_grace(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    gate = Gate()
    engine = make_engine(store, clock, [gated(gate)], shutdown_grace=timedelta(seconds=5))
    async with engine:
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        asyncio.get_running_loop().call_soon(gate.opened.set)
    state = await until(store, eid, unclaimed)
    assert (state.status, gate.cancelled) == (spi.Completed(), 0)


class FlakyRenewals(MemoryStore):
    """A real memory store whose claim handles fail their `fail_at`-th renewal (1 is the confirmation)."""

    def __init__(self, clock: ManualClock, fail_at: int) -> None:
        super().__init__(clock)
        self.fail_at = fail_at

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        handles = await super().claim_ready(*args, **kwargs)  # type: ignore[arg-type]
        for handle in handles:
            renew, calls = handle.renew_claim, [0]

            async def flaky(lease: timedelta, renew=renew, calls=calls) -> bool:  # type: ignore[no-untyped-def]
                calls[0] += 1
                if calls[0] == self.fail_at:
                    raise spi.FlowStoreError("renewal timed out")
                return await renew(lease)

            handle.renew_claim = flaky  # type: ignore[method-assign]
        return handles


async def test_a_renewal_the_store_cannot_answer_is_recorded_and_retried(clock: ManualClock) -> None:
    store, gate = FlakyRenewals(clock, fail_at=2), Gate()
    async with make_engine(store, clock, [gated(gate)]) as engine:
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        await clock.advance(RENEW)
        health = engine.health()
        assert (health.store_failures, health.last_store_failure) == (1, "FlowStoreError: renewal timed out")
        assert (health.claims_held, gate.cancelled) == ((eid,), 0)
        await clock.advance(RENEW)
        assert (await store.get_execution(eid)).claim_expiry == clock.now() + LEASE
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()
    assert gate.calls == 1


async def test_a_confirmation_the_store_cannot_answer_leaves_the_row(clock: ManualClock) -> None:
    store, gate = FlakyRenewals(clock, fail_at=1), Gate()
    async with make_engine(store, clock, [gated(gate)]) as engine:
        eid = await engine.workflows.start("gated")
        await until(store, eid, lambda s: s.executor is not None)
        await settle()
        assert (engine.health().store_failures, engine.health().claims_held, gate.calls) == (1, (), 0)
        store.fail_at = 0
        await advance(clock, LEASE)  # the unconfirmed claim lapses and the row is offered again
        await gate.entered.wait()
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()
