"""History: get_history, its order (I7), its numbering and its pages."""

from __future__ import annotations

import sys

from flowdeck.store import spi
from flowdeck.store.conformance.case import K, StoreCase, field
from flowdeck.store.conformance.support import EX1, EX2, WF1, StoreFixture


class HistoryCases(StoreCase):
    """History: events in append order (I7), numbered, paged by limit and offset."""

    # ------------------------------------------------------------------------ I7: event ordering

    async def test_i7_22_three_sequential_appends_come_back_in_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "a"))
        await handle.append_event(fx.step_completed("e1", "a"))
        await handle.append_event(fx.step_started("e1", "b"))
        assert await fx.kinds("e1") == [K.CREATED, K.STEP_STARTED, K.STEP_COMPLETED, K.STEP_STARTED]

    async def test_cross_104_events_keep_order_across_executors_they_name(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "s1", EX1))
        await handle.append_event(fx.step_started("e1", "s1", EX2))
        await handle.append_event(fx.step_started("e1", "s2", EX1))
        assert [e.detail for e in (await fx.history("e1"))[1:]] == ["s1", "s1", "s2"]

    # ------------------------------------------------------------------------ event history

    async def append_steps(self, fx: StoreFixture, eid: str, count: int) -> None:
        """Bring the history of a created `eid` to 1 + `count` events."""
        handle = await fx.claim(eid)
        for i in range(count):
            await handle.append_event(fx.step_started(eid, f"s{i}"))
        await handle.finish(spi.Suspended(frozenset()))

    async def test_history_60_events_in_append_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "s1"))
        await handle.append_event(fx.step_completed("e1", "s1"))
        events = await fx.history("e1")
        assert len(events) == 3
        assert (events[1].kind, events[1].detail) == (K.STEP_STARTED, "s1")
        assert events[2].kind == K.STEP_COMPLETED

    async def test_history_61_limit_returns_at_most_n(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 10)
        page = await fx.store.get_history("e1", limit=3)
        assert (len(page.events), page.has_more) == (3, True)

    async def test_history_62_offset_skips_events(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 5)
        page = await fx.store.get_history("e1", limit=10, offset=3)
        assert (len(page.events), page.has_more) == (3, False)
        assert [e.seq for e in page.events] == [4, 5, 6]

    async def test_history_63_second_create_keeps_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_completed("e1", "s1"))
        before = await fx.history("e1")
        created = await fx.store.create_execution_if_absent(
            "e1", WF1, "", spi.Running(), fx.created("e1"), {"x": field(1)}
        )
        assert created is False
        assert await fx.history("e1") == before
        assert K.STEP_COMPLETED in await fx.kinds("e1")
        assert await fx.store.get_field("e1", "x") is None

    async def test_history_64_last_page_with_huge_limit_has_no_more(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 1)
        for huge in (2**31 - 1, sys.maxsize):
            page = await fx.store.get_history("e1", limit=huge, offset=1)
            assert (len(page.events), page.has_more) == (1, False)

    async def test_history_65_negative_limit_means_all(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 2)
        page = await fx.store.get_history("e1", limit=-1)
        assert (len(page.events), page.has_more) == (3, False)

    async def test_history_67_offset_at_end_is_empty_with_no_more(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 1)
        page = await fx.store.get_history("e1", limit=5, offset=2)
        assert (list(page.events), page.has_more) == ([], False)

    async def test_history_68_unknown_execution_is_empty(self, fx: StoreFixture) -> None:
        page = await fx.store.get_history("nope", limit=5)
        assert (list(page.events), page.has_more) == ([], False)
        page = await fx.store.get_history("nope")
        assert (list(page.events), page.has_more) == ([], False)

    async def test_flowdeck_history_events_carry_increasing_seq(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 4)
        await fx.deliver("e1", "x", 1)
        await fx.store.request_cancel("e1")
        assert [e.seq for e in await fx.history("e1")] == [1, 2, 3, 4, 5, 6, 7]
        page = await fx.store.get_history("e1", limit=2, offset=2)
        assert ([e.seq for e in page.events], page.has_more) == ([3, 4], True)
