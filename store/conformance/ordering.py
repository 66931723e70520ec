"""The order and the time windows of list_executions (a Flowdeck addition): `order_by`,
`created_after`/`created_before` and `updated_after`/`updated_before`, applied before paging, with the
total."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from flowdeck.store import spi
from flowdeck.store.conformance.case import F, StoreCase
from flowdeck.store.conformance.support import WF1, StoreFixture
from flowdeck.store.field_terms import parse_field_term


def order(page: spi.ExecutionPage) -> list[str]:
    return [s.execution_id for s in page.items]


class OrderingCases(StoreCase):
    """Newest created first by default, newest changed first with `order_by="updated"` (ties: the later
    created first), a half-open creation window; all of it with every other narrowing and offset paging."""

    async def three_a_second_apart(self, fx: StoreFixture, prefix: str = "e") -> datetime:
        """`e1`, `e2`, `e3` created a second apart; `e1` then written to last. Answers e1's creation."""
        first = fx.clock.now()
        for n in (1, 2, 3):
            await fx.mk_execution(f"{prefix}{n}", fields={"n": spi.FieldData.of({"k": 1}, "N")})
            await fx.clock.advance(1)
        await fx.store.request_cancel(f"{prefix}1", "moved to the top of the updated order")
        return first

    async def test_flowdeck_order_by_updated_puts_the_latest_change_first(self, fx: StoreFixture) -> None:
        await self.three_a_second_apart(fx)
        assert order(await fx.store.list_executions(WF1)) == ["e3", "e2", "e1"]
        assert order(await fx.store.list_executions(WF1, order_by="created")) == ["e3", "e2", "e1"]
        page = await fx.store.list_executions(WF1, order_by="updated")
        assert (order(page), page.total) == (["e1", "e3", "e2"], 3)

    async def test_flowdeck_order_by_updated_pages_with_offset(self, fx: StoreFixture) -> None:
        await self.three_a_second_apart(fx)
        pages = [await fx.store.list_executions(WF1, None, 1, n, order_by="updated") for n in range(4)]
        assert [order(p) for p in pages] == [["e1"], ["e3"], ["e2"], []]
        assert {p.total for p in pages} == {3}

    async def test_flowdeck_updated_ties_put_the_later_created_first(self, fx: StoreFixture) -> None:
        for eid in ("t1", "t2", "t3"):
            await fx.mk_execution(eid)  # one instant: created and updated tie
        assert order(await fx.store.list_executions(WF1, order_by="updated")) == ["t3", "t2", "t1"]

    async def test_flowdeck_order_by_updated_with_prefix_filter_and_field(self, fx: StoreFixture) -> None:
        await self.three_a_second_apart(fx, "a")
        await self.three_a_second_apart(fx, "b")
        term = parse_field_term("field:n.k=1")
        found = await fx.store.list_executions(WF1, None, 2, 0, "a", [term], order_by="updated")
        assert (order(found), found.total) == (["a1", "a3"], 3)
        found = await fx.store.list_executions(WF1, F.Running(), 5, 1, "b", order_by="updated")
        assert (order(found), found.total) == (["b3", "b2"], 3)  # b1, cancelling, is still Running
        found = await fx.store.list_executions(None, F.Cancelling(), order_by="updated")
        assert order(found) == ["b1", "a1"]

    async def test_flowdeck_created_window_is_half_open(self, fx: StoreFixture) -> None:
        first = await self.three_a_second_apart(fx)
        second, third = first + timedelta(seconds=1), first + timedelta(seconds=2)

        async def window(after: datetime | None, before: datetime | None) -> tuple[list[str], int]:
            page = await fx.store.list_executions(WF1, created_after=after, created_before=before)
            return order(page), page.total

        assert await window(second, None) == (["e3", "e2"], 2)
        assert await window(None, third) == (["e2", "e1"], 2)
        assert await window(second, third) == (["e2"], 1)
        assert await window(third, second) == ([], 0)
        assert await window(None, None) == (["e3", "e2", "e1"], 3)

    async def test_flowdeck_created_window_with_every_other_narrowing(self, fx: StoreFixture) -> None:
        first = await self.three_a_second_apart(fx)
        await fx.mk_waits("e1", {"ok": spi.WakeOnField("ok")})
        await fx.mk_waits("e3", {"ok": spi.WakeOnField("ok")})
        after = first + timedelta(seconds=1)
        page = await fx.store.list_executions(WF1, F.WaitingForInput("ok"), created_after=after)
        assert (order(page), page.total) == (["e3"], 1)
        page = await fx.store.list_executions(WF1, F.Sleeping(), created_after=after)
        assert (order(page), page.total) == ([], 0)
        term = parse_field_term("field:n.k=1")
        page = await fx.store.list_executions(
            WF1, None, 1, 0, "e", [term], order_by="updated", created_before=after
        )
        assert (order(page), page.total) == (["e1"], 1)
        page = await fx.store.list_executions(WF1, None, 0, created_after=after)
        assert (order(page), page.total) == ([], 2)  # a count alone

    async def test_flowdeck_updated_window_is_half_open(self, fx: StoreFixture) -> None:
        first = await self.three_a_second_apart(fx)  # e1's last change is 3 s after it was created
        second, third, fourth = (first + timedelta(seconds=n) for n in (1, 2, 3))

        async def window(after: datetime | None, before: datetime | None) -> tuple[list[str], int]:
            page = await fx.store.list_executions(WF1, updated_after=after, updated_before=before)
            return order(page), page.total

        assert await window(second, fourth) == (["e3", "e2"], 2)
        assert await window(fourth, None) == (["e1"], 1)
        assert await window(None, third) == (["e2"], 1)
        assert await window(fourth, fourth) == ([], 0)
        assert await window(None, None) == (["e3", "e2", "e1"], 3)

    async def test_flowdeck_updated_window_with_a_status_and_the_creation_window(
        self, fx: StoreFixture
    ) -> None:
        """What the overview's bars link to: the executions that ended (completed) within a minute."""
        first = await self.three_a_second_apart(fx)
        await fx.clock.advance(1)
        await fx.mk_execution("d1", status=spi.Completed())  # ended 4 s after e1 was created
        moved = first + timedelta(seconds=3)
        page = await fx.store.list_executions(WF1, F.Completed(), updated_after=moved)
        assert (order(page), page.total) == (["d1"], 1)
        page = await fx.store.list_executions(
            WF1,
            None,
            5,
            0,
            order_by="updated",
            updated_after=moved,
            created_before=first + timedelta(seconds=1),
        )
        assert (order(page), page.total) == (["e1"], 1)
        page = await fx.store.list_executions(WF1, None, 0, updated_after=moved)
        assert (order(page), page.total) == ([], 2)  # a count alone

    async def test_flowdeck_unknown_order_is_refused(self, fx: StoreFixture) -> None:
        with pytest.raises(ValueError, match="order_by"):
            await fx.store.list_executions(WF1, order_by="id")
