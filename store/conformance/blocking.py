"""The cases of a store whose blocking poll waits in this process and is woken in it by a write."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import EX1, EX2, SERVED, WF1, WF2, StoreFixture, seconds


class _Jumping(ManualClock):
    """A manual clock that jumps both times forward right after one chosen task next reads the wall clock,
    to land a jump exactly between a poll's ask and its deadline check."""

    def __init__(self) -> None:
        super().__init__()
        self.jump_after: tuple[asyncio.Task[Any], float] | None = None

    def now(self) -> Any:
        value = super().now()
        if self.jump_after is not None:
            task, by = self.jump_after
            try:
                current = asyncio.current_task()
            except RuntimeError:  # read from a thread: not the chosen task
                current = None
            if current is task:
                self.jump_after = None
                self._wall += timedelta(seconds=by)
                self._mono += by
        return value


class InProcessBlockingConformance(StoreCase):
    """The reference in-memory store's own cases (kyo-flow-store-spec.md §2, "Store-specific cases"), for
    any store whose blocking poll waits in this process and is woken in this process by a write."""

    async def wall_step_case(self, fx: StoreFixture, step: timedelta) -> None:
        start = fx.clock.monotonic()
        poll = fx.start_poll(served=SERVED, timeout=seconds(5))
        await fx.blocked()
        fx.clock.step_wall(step)
        await fx.clock.advance(1)
        await fx.mk_execution("e2", WF2)  # a write the poll cannot claim
        for _ in range(59):
            await fx.blocked_or_done(poll)  # woken by the write, it waits again (or has answered)
            if poll.done():
                break
            await fx.clock.advance(1)
        await fx.blocked_or_done(poll)
        assert poll.done(), "the poll outlived a minute of monotonic time"
        assert await poll == []
        assert 5 <= fx.clock.monotonic() - start < 60

    async def test_store_specific_01_deadline_on_monotonic_time_when_wall_steps_back(
        self, fx: StoreFixture
    ) -> None:
        await self.wall_step_case(fx, -timedelta(hours=1))

    async def test_store_specific_02_deadline_on_monotonic_time_when_wall_steps_forward(
        self, fx: StoreFixture
    ) -> None:
        await self.wall_step_case(fx, timedelta(hours=1))

    async def test_store_specific_03_write_before_poll_does_not_wake_it(self, fx: StoreFixture) -> None:
        """[TC] the poll reads the wall clock exactly twice: once on entry, once at the deadline."""
        await fx.mk_execution("e2", WF2)
        reads = fx.clock.now_calls
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads == 2

    async def test_store_specific_04_one_write_wakes_every_blocked_poll(self, fx: StoreFixture) -> None:
        """The clock never moves: only a broadcast wake lets B see the row while A keeps waiting."""
        hour = timedelta(hours=1)
        a = fx.start_poll(EX1, served=frozenset({(WF1, "")}), timeout=hour)
        b = fx.start_poll(EX2, served=frozenset({(WF2, "")}), timeout=hour)
        await fx.blocked(2)
        await fx.mk_execution("e2", WF2)
        assert fx.ids(await fx.answer_of(b)) == {"e2"}
        await settle()
        assert not a.done()
        await fx.mk_execution("e1", WF1)
        assert fx.ids(await fx.answer_of(a)) == {"e1"}

    async def test_store_specific_05_poll_finding_time_up_after_wake_asks_once_more(self) -> None:
        clock = _Jumping()
        store = await self.open_store(clock)
        try:
            fx = StoreFixture(store, clock)
            await fx.mk_execution("e1")
            await fx.mk_waits("e1", {"nap": spi.WakeAt(clock.now() + seconds(1))})
            poll = fx.start_poll(served=SERVED, timeout=seconds(1))
            await fx.blocked()
            unservable = fx.created("e2", WF2)
            clock.jump_after = (poll, 2.0)
            await store.create_execution_if_absent("e2", WF2, "", spi.Running(), unservable)
            assert fx.ids(await fx.answer_of(poll)) == {"e1"}
            assert clock.jump_after is None, "the poll never asked after its wake"
        finally:
            await self.close_store(store)

    async def test_store_specific_07_created_claimed_row_wakes_no_poll(self, fx: StoreFixture) -> None:
        """Flowdeck: nobody else may claim a created-claimed row, so its creation wakes nobody; the poll
        reads the wall clock once more after it, at its deadline, and answers nothing."""
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        await fx.blocked()
        assert await fx.create_claimed("e1") is not None
        reads = fx.clock.now_calls
        await settle()  # a wake, had there been one, reaches the poll, which asks again and waits again
        await fx.blocked()
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads == 1

    async def test_store_specific_08_claiming_delivery_wakes_no_poll(self, fx: StoreFixture) -> None:
        """Flowdeck: a delivery that claims the row it made ready wakes nobody (the poll reads the wall clock
        once more, at its deadline); one that claims nothing wakes the poll, which asks again (once more).

        Clock reads are counted from before each delivery: a woken poll may ask again before the delivery's
        caller resumes, so counting from after it would depend on scheduling. A non-claiming delivery's own
        reads are measured first, with no poll running, and subtracted."""
        for eid, wait in (("e1", "go"), ("e2", "other"), ("e3", "other")):
            await fx.mk_execution(eid)
            await fx.mk_waits(eid, {wait: spi.WakeOnField(wait)})
        reads = fx.clock.now_calls
        assert await fx.deliver_claiming("e3", "go", "yes") == (spi.Delivered(), None)
        delivery_reads = fx.clock.now_calls - reads
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        await fx.blocked()
        _, handle = await fx.deliver_claiming("e1", "go", "yes")
        assert handle is not None
        reads = fx.clock.now_calls
        await settle()
        await fx.blocked()
        assert fx.clock.now_calls == reads, "a claiming delivery woke the poll"
        reads = fx.clock.now_calls
        assert await fx.deliver_claiming("e2", "go", "yes") == (spi.Delivered(), None)
        await settle()
        await fx.blocked_or_done(poll)
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads - delivery_reads == 2

    async def test_store_specific_06_registration_wakes_poll_which_asks_once(self, fx: StoreFixture) -> None:
        """A poll woken by a registration asks once and answers, so its caller polls with its newer set."""
        poll = fx.start_poll(served=SERVED, timeout=timedelta(hours=1))
        await fx.blocked()
        await fx.store.put_workflow(
            spi.WorkflowInfo(id=WF1, structural_hash="h1", meta=spi.WorkflowMeta(version="1"))
        )
        assert await fx.answer_of(poll) == []
