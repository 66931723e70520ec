"""Rate limits (`store.rate_limits`, issue 31): a take is one atomic GCRA step per limit key, so tokens
are never over-spent however many takers race; a take that finds the limit spent answers (and reserves)
the slot its token is due at; the keys of one limit, and limits, are independent."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowdeck.store import rate_limits, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import StoreFixture

TENTH = rate_limits.Rate(timedelta(milliseconds=100))  # ten a second, evenly spaced


class RateLimitCases(StoreCase):
    async def test_flowdeck_a_first_take_is_now_and_the_next_is_an_interval_later(
        self, fx: StoreFixture
    ) -> None:
        now = fx.clock.now()
        first = await fx.store.take_token("carrier-api", "", TENTH)
        second = await fx.store.take_token("carrier-api", "", TENTH)
        assert first == rate_limits.Take(now, taken=True)
        # refused now: it answers (and reserves) the slot its token is due at
        assert second == rate_limits.Take(now + timedelta(milliseconds=100), taken=False)
        await fx.clock.advance(0.2)
        third = await fx.store.take_token("carrier-api", "", TENTH)
        assert third == rate_limits.Take(fx.clock.now(), taken=True)

    async def test_flowdeck_tokens_are_never_over_spent_by_concurrent_takers(self, fx: StoreFixture) -> None:
        rate = rate_limits.Rate(timedelta(milliseconds=100), burst=3)
        now = fx.clock.now()
        takes = await asyncio.gather(*(fx.store.take_token("carrier-api", "", rate) for _ in range(40)))
        slots = sorted(t.slot for t in takes)
        assert sum(t.taken for t in takes) == 3  # the burst, and no more
        assert all(t.taken == (t.slot == now) for t in takes)
        # GCRA's bound: any `burst` + 1 consecutive slots span at least one interval, so no span of `d`
        # holds more than burst + d / interval of them
        assert all(slots[i + 3] - slots[i] >= rate.interval for i in range(len(slots) - 3))
        assert slots[-1] == now + 37 * rate.interval
        [bucket] = await fx.store.list_rate_buckets("carrier-api")
        assert (bucket.taken, bucket.reserved) == (3, 37)

    async def test_flowdeck_keys_of_a_limit_and_limits_are_independent(self, fx: StoreFixture) -> None:
        now = fx.clock.now()
        a1 = await fx.store.take_token("carrier-api", "dhl", TENTH)
        b1 = await fx.store.take_token("carrier-api", "ups", TENTH)
        c1 = await fx.store.take_token("mailer", "dhl", TENTH)
        a2 = await fx.store.take_token("carrier-api", "dhl", TENTH)
        assert [a1.taken, b1.taken, c1.taken, a2.taken] == [True, True, True, False]
        assert a2.slot == now + TENTH.interval
        found = await fx.store.list_rate_buckets()
        assert [(b.name, b.key, b.taken, b.reserved) for b in found] == [
            ("carrier-api", "dhl", 1, 1),
            ("carrier-api", "ups", 1, 0),
            ("mailer", "dhl", 1, 0),
        ]
        assert [b.key for b in await fx.store.list_rate_buckets("carrier-api")] == ["dhl", "ups"]

    async def test_flowdeck_an_idle_limit_does_not_save_up_tokens_past_its_burst(
        self, fx: StoreFixture
    ) -> None:
        await fx.store.take_token("carrier-api", "", TENTH)
        await fx.clock.advance(60)
        takes = [await fx.store.take_token("carrier-api", "", TENTH) for _ in range(3)]
        assert [t.taken for t in takes] == [True, False, False]
        assert takes[2].slot == fx.clock.now() + 2 * TENTH.interval

    async def test_flowdeck_the_observed_rate_counts_slots_per_window(self, fx: StoreFixture) -> None:
        rate = rate_limits.Rate(timedelta(seconds=1))
        for _ in range(30):  # one token a second for half a minute, taken as each falls due
            await fx.store.take_token("carrier-api", "", rate)
            await fx.clock.advance(1)
        await fx.clock.advance(rate_limits.WINDOW.total_seconds())
        [bucket] = await fx.store.list_rate_buckets()
        assert (bucket.taken, bucket.reserved, bucket.window_slots) == (30, 0, 30)
        assert rate_limits.observed_per_second(bucket, fx.clock.now()) == 30 / 60
        await fx.clock.advance(rate_limits.WINDOW.total_seconds())
        assert rate_limits.observed_per_second(bucket, fx.clock.now()) == 0.0

    async def test_flowdeck_rate_limited_filter_is_a_rate_row_of_the_limit(self, fx: StoreFixture) -> None:
        F = spi.ExecutionFilter
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        due = fx.clock.now() + timedelta(seconds=30)
        await fx.mk_waits("e1", {rate_limits.rate_row("ship", "carrier-api"): spi.WakeAt(due)})
        await fx.mk_waits("e2", {rate_limits.rate_row("mail", "mailer"): spi.WakeAt(due)})
        await fx.mk_waits("e3", {"nap": spi.WakeAt(due)})

        async def listed(filt: spi.ExecutionFilter.Any) -> set[str]:
            page = await fx.store.list_executions(None, filt)
            counted = await fx.store.list_executions(None, filt, limit=0)
            assert counted.total == len(page.items)
            return {s.execution_id for s in page.items}

        assert await listed(F.parse("rate-limited")) == {"e1", "e2"}
        assert await listed(F.parse("rate-limited:carrier-api")) == {"e1"}
        assert await listed(F.RateLimited("nobody")) == set()
        assert await listed(F.Sleeping()) == {"e1", "e2", "e3"}

    async def test_flowdeck_a_new_reservation_replaces_a_rate_row_where_a_sleep_keeps_its_first(
        self, fx: StoreFixture
    ) -> None:
        """A re-run of a node whose start spent its reservation (a kill mid-body) reserves anew on the same
        row: the row must wake at the new slot, not the spent one (a sleep's row stays put-if-absent)."""
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        now = fx.clock.now()
        row = rate_limits.rate_row("ship", "carrier-api")
        spent, anew = spi.WakeAt(now + timedelta(seconds=1)), spi.WakeAt(now + timedelta(seconds=5))
        for wake in (spent, anew):
            event = fx.event(spi.EventKind.RATE_LIMITED, "e1", step_name="ship", limit="carrier-api")
            assert await handle.record_wait(row, wake, event) == spi.WriteOutcome.APPLIED
            nap = fx.event(spi.EventKind.SLEEP_STARTED, "e1", step_name="nap")
            assert await handle.record_wait("nap", wake, nap) == spi.WriteOutcome.APPLIED
        state = await fx.state("e1")
        assert dict(state.waits) == {row: anew, "nap": spent}
