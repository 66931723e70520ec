"""A deferred start (`store.deferral`, a Flowdeck addition): an execution whose Created event carries
`not_before` is written with its wait row, no claim takes it before then, and its first attempt's ending
retires the row."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.store import deferral, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import WF1, StoreFixture


class DeferralCases(StoreCase):
    async def mk_deferred(self, fx: StoreFixture, eid: str, after: timedelta) -> None:
        data = deferral.with_not_before({}, fx.clock.now() + after)
        event = fx.event(spi.EventKind.CREATED, eid, WF1, **data)
        assert await fx.store.create_execution_if_absent(eid, WF1, "", spi.Running(), event)

    async def test_flowdeck_a_deferred_start_is_claimed_once_its_time_comes(self, fx: StoreFixture) -> None:
        await self.mk_deferred(fx, "later", timedelta(minutes=5))
        due = fx.clock.now() + timedelta(minutes=5)
        assert (await fx.state("later")).waits == {deferral.PATH: spi.WakeAt(due)}
        assert await fx.poll() == []
        await fx.clock.advance(299)
        assert await fx.poll() == []
        await fx.clock.advance(1)
        [handle] = await fx.poll()
        assert (handle.state.execution_id, handle.satisfied) == ("later", frozenset({deferral.PATH}))
        assert await handle.finish(spi.Suspended(frozenset())) == spi.StatusOutcome.APPLIED
        assert (await fx.state("later")).waits == {}  # the attempt's ending retired the row

    async def test_flowdeck_a_deferred_starts_history_says_when(self, fx: StoreFixture) -> None:
        await self.mk_deferred(fx, "later", timedelta(hours=1))
        [created] = await fx.history("later")
        assert deferral.not_before_of(created.data) == fx.clock.now() + timedelta(hours=1)
