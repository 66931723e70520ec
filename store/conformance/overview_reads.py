"""Conformance cases for what the console's overview reads (Flowdeck additions): failures by kind and stops
by code, started/completed/failed per bucket of time, and the ready backlog (the health page).

A mixin of `FlowStoreConformance`, so every backend runs them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowdeck.store import counts, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import LEASE, SERVED, SERVED_BOTH, WF1, WF2, StoreFixture, seconds


class OverviewReadCases(StoreCase):
    """The overview's reads: each case names the contract method it holds to its docstring."""

    async def test_overview_count_by_code(self, fx: StoreFixture) -> None:
        assert list(await fx.store.count_by_code()) == []
        await fx.mk_execution("e1", status=spi.Failed("boom", "KeyError"))
        await fx.mk_execution("e2", status=spi.Failed("bang", "KeyError"))
        await fx.mk_execution("e3", status=spi.Failed("untyped"))
        await fx.mk_execution("e4", WF2, status=spi.Failed("oops", "AssertionError"))
        await fx.mk_execution("e5", status=spi.Stopped("F0002", "stuck"))
        await fx.mk_execution("e6")
        await fx.stop("e6", spi.Stopped("F0001", "charge", "boom", "Traceback ..."))
        await fx.mk_execution("e7")
        await fx.mk_execution("e8", status=spi.Completed())
        assert list(await fx.store.count_by_code()) == [
            counts.CodeCount(WF1, "failed", None, 1),
            counts.CodeCount(WF1, "failed", "KeyError", 2),
            counts.CodeCount(WF1, "stopped", "F0001", 1),
            counts.CodeCount(WF1, "stopped", "F0002", 1),
            counts.CodeCount(WF2, "failed", "AssertionError", 1),
        ]

    async def test_overview_activity_buckets(self, fx: StoreFixture) -> None:
        t0 = fx.clock.now()
        await fx.mk_execution("e0")  # created before the window: its ending counts, its start does not
        since = t0.replace(microsecond=0) + seconds(1)
        width = seconds(10)
        await fx.clock.advance(5)
        await fx.mk_execution("e1")
        await fx.mk_execution("e2", WF2)
        await fx.clock.advance(10)
        await fx.terminate("e1", spi.Completed())
        await fx.terminate("e0", spi.Completed())
        await fx.clock.advance(10)
        await fx.terminate("e2", spi.Failed("boom", "KeyError"))
        await fx.mk_execution("e3")
        await fx.mk_execution("e4")
        await fx.terminate("e4", spi.Cancelled("no"))  # neither completed nor failed
        assert list(await fx.store.activity(since, width)) == [
            counts.ActivityBucket(since, 2, 0, 0),
            counts.ActivityBucket(since + width, 0, 2, 0),
            counts.ActivityBucket(since + 2 * width, 2, 0, 1),
        ]
        later = since + seconds(20)
        assert list(await fx.store.activity(later, seconds(3600))) == [counts.ActivityBucket(later, 2, 0, 1)]
        future = since + seconds(3600)
        assert list(await fx.store.activity(future, width)) == []

    async def test_overview_activity_refuses_a_bucketing_it_cannot_answer(self, fx: StoreFixture) -> None:
        now = fx.clock.now().replace(microsecond=0)
        with pytest.raises(ValueError, match="whole seconds"):
            await fx.store.activity(now + timedelta(microseconds=5), seconds(60))
        with pytest.raises(ValueError, match="whole seconds"):
            await fx.store.activity(now, timedelta(0))
        with pytest.raises(ValueError, match="at most 1440"):
            await fx.store.activity(now - timedelta(days=2), seconds(60))

    async def test_overview_waiting_longest_and_retrying(self, fx: StoreFixture) -> None:
        t0 = fx.clock.now()
        await fx.mk_execution("e0")  # created first, ended: not waiting
        for eid in ("e2", "e1", "e3", "e4"):  # e2 and e1 created at one instant: creation order decides
            await fx.mk_execution(eid, WF2 if eid == "e3" else WF1)
        await fx.clock.advance(5)
        await fx.mk_execution("e5")
        await fx.mk_waits("e5", {"later": spi.WakeOnField("later")})
        await fx.mk_waits("e1", {"approve": spi.WakeOnField("approval")})
        await fx.clock.advance(5)
        due = t0 + seconds(65)
        await fx.mk_waits("e2", {"pay#retry1": spi.WakeAt(due), "nap": spi.WakeAt(due + seconds(9))})
        await fx.mk_waits("e3", {"sleep": spi.WakeAt(t0 + seconds(600))})
        handle = await fx.claim("e0")
        wake = spi.WakeOnField("gone")
        recorded = await handle.record_wait("gone", wake, fx.waiting("e0", "gone", wake))
        assert recorded == spi.WriteOutcome.APPLIED
        ending = spi.Terminal(spi.Completed(), fx.ending("e0", spi.Completed()))
        assert await handle.finish(ending) == spi.StatusOutcome.APPLIED  # the ending retires its row
        page = await fx.store.waiting_longest(2)
        assert page.total == 4
        assert list(page.items) == [
            counts.Waiting("e2", WF1, t0, t0 + seconds(10), ("nap", "pay#retry1"), due),
            counts.Waiting("e1", WF1, t0, t0 + seconds(5), ("approve",), None),
        ]
        every = (await fx.store.waiting_longest(10)).items
        assert [w.execution_id for w in every] == ["e2", "e1", "e3", "e5"]
        retrying = await fx.store.waiting_longest(10, retrying=True)
        assert retrying.total == 1
        assert [w.execution_id for w in retrying.items] == ["e2"]
        assert (await fx.store.waiting_longest(0)).items == []

    async def test_ready_backlog_counts_what_a_claim_would_take(self, fx: StoreFixture) -> None:
        t0 = fx.clock.now()
        assert await fx.store.ready_backlog(SERVED_BOTH) == counts.Backlog(0, False, None)
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.mk_execution("e4", WF2)
        await fx.mk_execution("e5", status=spi.Completed())
        await fx.mk_execution("e6", status=spi.Stopped("F0001", "ship", "boom"))
        await fx.mk_execution("e7", hash="other")  # a version nobody serves: parked, never claimed
        await fx.mk_waits("e2", {"approval": spi.WakeOnField("approval")})
        await fx.mk_waits("e3", {"nap": spi.WakeAt(t0 + seconds(30))})
        await fx.clock.advance(10)
        assert await fx.store.ready_backlog(SERVED_BOTH) == counts.Backlog(2, False, t0)  # e1, e4
        assert await fx.store.ready_backlog(SERVED) == counts.Backlog(1, False, t0)  # e1
        assert await fx.store.ready_backlog(frozenset()) == counts.Backlog(0, False, None)
        await fx.clock.advance(30)  # e3's sleep came due at t0 + 30
        assert await fx.store.ready_backlog(SERVED_BOTH) == counts.Backlog(3, False, t0)
        assert await fx.store.ready_backlog(SERVED_BOTH, cap=1) == counts.Backlog(1, True, t0)
        await fx.claim("e1")  # a live claim: no longer waiting to be claimed (the others are given back now)
        assert await fx.store.ready_backlog(SERVED_BOTH) == counts.Backlog(2, False, t0 + seconds(40))
        await fx.clock.advance(LEASE.total_seconds() + 5)  # the claim lapsed: ready again since its expiry
        lapsed = await fx.store.ready_backlog(SERVED_BOTH)
        assert (lapsed.ready, lapsed.oldest_ready) == (3, t0 + seconds(40))
