"""Workers: one claim loop feeding attempt slots, the confirmation only for a stale claim, lease renewal, a
lost claim stopping its body, poll failures in health, batches, and what leaving the engine does to
attempts still running."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import (
    LEASE,
    POLL,
    RENEW,
    advance,
    kinds,
    make_engine,
    released,
    unclaimed,
    until,
)


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
        await released(engine)
    assert engine.health().workers_alive == 0


async def test_claims_and_outcomes_are_logged(
    store: spi.FlowStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="flowdeck.engine.worker")
    async with make_engine(store, clock, [Flow.init("quick").output("x", lambda ctx: 1, type=int)]) as engine:
        eid = await engine.workflows.start("quick")
        await until(store, eid)
        await settle()
    actions = [
        (r.action, getattr(r, "execution_id", None))
        for r in caplog.records
        if r.name == "flowdeck.engine.worker"
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
    # one attempt slot: the first engine, busy with the attempt, has no room to take the lapsed row back
    async with make_engine(store, clock, [gated(gate)], batch_size=1) as first:
        eid = await first.workflows.start("gated")
        await gate.entered.wait()
        # The wall clock jumps past the lease with no renewal due on the monotonic clock: the claim lapses.
        clock.step_wall(LEASE + timedelta(seconds=1))
        async with make_engine(store, clock, [gated(gate)]) as second:
            # the second engine claims the lapsed row and runs the body again
            await until(store, eid, lambda s: s.executor == second.executor_id and gate.calls == 2)
            await clock.advance(RENEW)  # the first engine's renewal is refused: its body is cancelled
            await released(first)
            assert gate.cancelled == 1
            gate.opened.set()
            assert (await until(store, eid)).status == spi.Completed()
    assert (await store.get_field(eid, "after")).decode() == "done!"


class FlakyStore(MemoryStore):
    """A real memory store whose next `failures` polls fail, as a store behind a dropped connection does."""

    def __init__(self, clock: ManualClock, failures: int, *, retryable: bool = True) -> None:
        super().__init__(clock)
        self.failures = failures
        self.retryable = retryable

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        if self.failures:
            self.failures -= 1
            raise spi.FlowStoreError("database went away", retryable=self.retryable)
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


async def test_a_transient_poll_failure_pauses_briefly_doubling_while_it_lasts(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # a locked SQLite database answers `retryable`: the worker asks again in 50 ms, not a poll timeout
    store = FlakyStore(clock, failures=3)
    flow = Flow.init("quick").output("x", lambda ctx: 1, type=int)
    began = clock.now()
    with caplog.at_level(logging.WARNING, logger="flowdeck.engine.worker"):
        async with make_engine(store, clock, [flow]) as engine:
            for _ in range(3):
                await advance(clock, timedelta(milliseconds=200))
            eid = await engine.workflows.start("quick")
            assert (await until(store, eid)).status == spi.Completed()
            assert engine.health().poll_failures == 3
    pauses = [r.getMessage() for r in caplog.records if r.getMessage().startswith("poll failed")]
    assert pauses == [
        "poll failed (FlowStoreError: database went away); pausing 0.05s",
        "poll failed (FlowStoreError: database went away); pausing 0.1s",
        "poll failed (FlowStoreError: database went away); pausing 0.2s",
    ]
    assert clock.now() - began < POLL  # polling went on well within one poll timeout


async def test_a_poll_failure_that_is_not_transient_pauses_the_poll_timeout(clock: ManualClock) -> None:
    store = FlakyStore(clock, failures=1, retryable=False)
    flow = Flow.init("quick").output("x", lambda ctx: 1, type=int)
    async with make_engine(store, clock, [flow]) as engine:
        await settle()
        await advance(clock, POLL - timedelta(seconds=1))
        await settle()
        eid = await engine.workflows.start("quick")
        await settle()
        assert (await store.get_execution(eid)).status == spi.Running()  # type: ignore[union-attr]
        await advance(clock, timedelta(seconds=1))
        assert (await until(store, eid)).status == spi.Completed()
        assert engine.health().poll_failures == 1


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


class CountingStore(MemoryStore):
    """A real memory store that counts its polls: how many are in flight at once, and the most ever."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.polls = self.in_flight = self.most_in_flight = 0
        self.limits: list[int] = []

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        self.polls += 1
        self.limits.append(args[3])  # type: ignore[arg-type]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await super().claim_ready(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            self.in_flight -= 1


async def test_one_claim_loop_polls_for_all_workers(clock: ManualClock) -> None:
    store = CountingStore(clock)
    flow = Flow.init("quick").output("x", lambda ctx: 1, type=int)
    async with make_engine(store, clock, [flow], workers=4, batch_size=2) as engine:
        await settle()
        assert (store.in_flight, engine.health().workers_alive) == (1, 4)  # one blocked poll, not four
        for _ in range(3):
            eid = await engine.workflows.start("quick")
            assert (await until(store, eid)).status == spi.Completed()
        await settle()
    # each start woke the one poll, which asked for the free slots (4 workers × batch 2, less those running)
    assert (store.most_in_flight, store.polls, store.limits[0], max(store.limits)) == (1, 4, 8, 8)


async def test_attempts_wait_for_a_free_slot(store: spi.FlowStore, clock: ManualClock) -> None:
    gate = Gate()
    engine = make_engine(store, clock, [gated(gate)], workers=1, batch_size=2)
    async with engine:
        ids = [await engine.workflows.start("gated") for _ in range(3)]
        await until(store, ids[1], lambda s: gate.calls == 2)
        await settle()
        # two slots: the third execution is left ready, unclaimed, until an attempt ends
        assert (gate.calls, (await store.get_execution(ids[2])).executor) == (2, None)
        assert len(engine.health().claims_held) == 2
        gate.opened.set()
        for eid in ids:
            assert (await until(store, eid)).status == spi.Completed()
    assert gate.calls == 3


class RenewalCounter(MemoryStore):
    """A real memory store whose claim handles count their renewals."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.renewals = 0

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        handles = await super().claim_ready(*args, **kwargs)  # type: ignore[arg-type]
        for handle in handles:
            renew = handle.renew_claim

            async def counted(lease: timedelta, renew=renew) -> bool:  # type: ignore[no-untyped-def]
                self.renewals += 1
                return await renew(lease)

            handle.renew_claim = counted  # type: ignore[method-assign]
        return handles


async def test_a_fresh_claim_starts_without_a_confirming_renewal(clock: ManualClock) -> None:
    store = RenewalCounter(clock)
    flow = Flow.init("quick").output("x", lambda ctx: 1, type=int).output("y", lambda ctx: 2, type=int)
    async with make_engine(store, clock, [flow]) as engine:
        eid = await engine.workflows.start("quick")
        assert (await until(store, eid)).status == spi.Completed()
    assert store.renewals == 0


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
    """A real memory store whose claim handles fail their `fail_at`-th renewal. With `stale_by` seconds, the
    worker's clock jumps that far between handing a claim over and starting its attempt (as on a loop too
    busy to start it at once), so the attempt begins with a confirming renewal (the first)."""

    def __init__(self, clock: JumpyClock, fail_at: int, stale_by: float = 0.0) -> None:
        super().__init__(clock)
        self.jumpy, self.fail_at, self.stale_by = clock, fail_at, stale_by

    async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
        handles = await super().claim_ready(*args, **kwargs)  # type: ignore[arg-type]
        if handles and self.stale_by:
            self.jumpy.jump_after_next_reading(self.stale_by)  # the worker's reading at the handover
        for handle in handles:
            renew, calls = handle.renew_claim, [0]

            async def flaky(lease: timedelta, renew=renew, calls=calls) -> bool:  # type: ignore[no-untyped-def]
                calls[0] += 1
                if calls[0] == self.fail_at:
                    raise spi.FlowStoreError("renewal timed out")
                return await renew(lease)

            handle.renew_claim = flaky  # type: ignore[method-assign]
        return handles


class JumpyClock(ManualClock):
    """A manual clock whose monotonic reading jumps ahead right after its next reading, waking no sleeper."""

    def __init__(self) -> None:
        super().__init__()
        self.skew = self.armed = 0.0

    def monotonic(self) -> float:
        reading = super().monotonic() + self.skew
        self.skew, self.armed = self.skew + self.armed, 0.0
        return reading

    def jump_after_next_reading(self, seconds: float) -> None:
        self.armed = seconds


@pytest.fixture
def jumpy() -> JumpyClock:
    return JumpyClock()


async def test_a_renewal_the_store_cannot_answer_is_recorded_and_retried(jumpy: JumpyClock) -> None:
    clock = jumpy
    store, gate = FlakyRenewals(clock, fail_at=1), Gate()
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


async def test_a_stale_claim_is_confirmed_before_its_attempt(jumpy: JumpyClock) -> None:
    clock = jumpy
    store, gate = FlakyRenewals(clock, fail_at=0, stale_by=RENEW.total_seconds()), Gate()
    async with make_engine(store, clock, [gated(gate)]) as engine:
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        # confirmed: the claim now expires a lease after the confirmation, not after the claim
        assert (await store.get_execution(eid)).claim_expiry == clock.now() + LEASE
        assert engine.health().store_failures == 0
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()


async def test_a_confirmation_the_store_cannot_answer_leaves_the_row(jumpy: JumpyClock) -> None:
    clock = jumpy
    store, gate = FlakyRenewals(clock, fail_at=1, stale_by=RENEW.total_seconds()), Gate()
    async with make_engine(store, clock, [gated(gate)]) as engine:
        eid = await engine.workflows.start("gated")
        await until(store, eid, lambda s: s.executor is not None)
        await settle()
        assert (engine.health().store_failures, engine.health().claims_held, gate.calls) == (1, (), 0)
        store.fail_at, store.stale_by = 0, 0.0
        await advance(clock, LEASE)  # the unconfirmed claim lapses and the row is offered again
        await gate.entered.wait()
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()


async def test_a_stale_claim_lost_before_its_attempt_writes_nothing(
    jumpy: JumpyClock, caplog: pytest.LogCaptureFixture
) -> None:
    clock = jumpy
    caplog.set_level(logging.INFO, logger="flowdeck.engine.worker")

    class LosesOnConfirm(FlakyRenewals):
        """Once: the wall clock passes the lease while the claim is handed over, so the confirmation is
        refused; the row, lapsed, is claimed again on the next poll."""

        async def claim_ready(self, *args: object, **kwargs: object):  # type: ignore[override]
            handles = await super().claim_ready(*args, **kwargs)
            if handles and self.stale_by:
                self.stale_by = 0.0
                clock.step_wall(LEASE + timedelta(seconds=1))  # after the claim, before its attempt
            return handles

    store, gate = LosesOnConfirm(clock, fail_at=0, stale_by=RENEW.total_seconds()), Gate()
    async with make_engine(store, clock, [gated(gate)]) as engine:
        eid = await engine.workflows.start("gated")
        await gate.entered.wait()
        gate.opened.set()
        assert (await until(store, eid)).status == spi.Completed()
        assert (engine.health().store_failures, gate.calls) == (0, 1)
    # the lost claim wrote nothing: one ExecutionClaimed, the second claim's
    assert (await kinds(store, eid)).count("ExecutionClaimed") == 1
    lost = [r for r in caplog.records if getattr(r, "action", None) == "claim_lost"]
    assert [r.getMessage() for r in lost] == [f"claim on {eid} was lost before it started; writing nothing"]
