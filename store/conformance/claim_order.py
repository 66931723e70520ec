"""The order of a claim (`store.claim_order`, a Flowdeck addition): the highest priority first, oldest first
among equals, and every `FAIR_SHARE`-th claim the oldest ready execution whatever its priority."""

from __future__ import annotations

from flowdeck.store import claim_order, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import WF1, StoreFixture


class ClaimOrderCases(StoreCase):
    """Executions started with a priority (their Created event's data), claimed one at a time."""

    async def mk_prioritised(self, fx: StoreFixture, eid: str, priority: int) -> None:
        event = fx.event(spi.EventKind.CREATED, eid, WF1, **claim_order.event_data(priority))
        assert await fx.store.create_execution_if_absent(eid, WF1, "", spi.Running(), event)
        await fx.clock.advance(1)

    async def claimed_one_by_one(self, fx: StoreFixture, count: int) -> list[str]:
        """`count` claims of one row each, every one kept (a claimed row is not ready again)."""
        order = []
        for _ in range(count):
            [handle] = await fx.poll(limit=1)
            order.append(handle.state.execution_id)
        return order

    async def test_flowdeck_the_row_keeps_its_priority(self, fx: StoreFixture) -> None:
        await self.mk_prioritised(fx, "urgent", 50)
        await fx.mk_execution("plain")
        assert (await fx.state("urgent")).priority == 50
        assert (await fx.state("plain")).priority == claim_order.DEFAULT
        [created] = [e for e in await fx.history("urgent") if e.kind == spi.EventKind.CREATED]
        assert created.data == {"priority": 50}

    async def test_flowdeck_claims_take_the_highest_priority_first(self, fx: StoreFixture) -> None:
        """Three of every four claims follow priority (equals oldest first); the fourth takes the oldest
        ready row, whatever its priority, so the low ones are claimed 1 in 4 while high ones keep coming."""
        for n in range(8):
            await self.mk_prioritised(fx, f"low{n}", -10)
        for n in range(8):
            await self.mk_prioritised(fx, f"high{n}", 10)
        order = await self.claimed_one_by_one(fx, 8)
        lows = [eid for eid in order if eid.startswith("low")]
        highs = [eid for eid in order if eid.startswith("high")]
        assert lows == ["low0", "low1"], order  # the fair turns, each the oldest ready row
        assert highs == [f"high{n}" for n in range(6)], order
        turns = [i for i, eid in enumerate(order) if eid.startswith("low")]
        assert turns[1] - turns[0] == claim_order.FAIR_SHARE, order

    async def test_flowdeck_without_priorities_the_claim_is_oldest_first(self, fx: StoreFixture) -> None:
        for n in range(6):
            await self.mk_prioritised(fx, f"e{n}", claim_order.DEFAULT)
        assert await self.claimed_one_by_one(fx, 6) == [f"e{n}" for n in range(6)]

    async def test_flowdeck_a_batch_holds_the_highest_priorities(self, fx: StoreFixture) -> None:
        for eid, priority in (("a", 0), ("b", 5), ("c", -5), ("d", 5), ("e", 100)):
            await self.mk_prioritised(fx, eid, priority)
        claimed = await fx.poll(limit=3)  # the store's first claim: a priority turn
        assert {h.state.execution_id for h in claimed} == {"e", "b", "d"}
