"""Search beyond exact values: text ignoring case, by prefix and by part, numbers by range, and the
`text:` term over failure and stop messages (issue 29). Each store answers them as `field_terms.term_matches`
means them."""

from __future__ import annotations

from typing import Any

from flowdeck.store import spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import StoreFixture
from flowdeck.store.field_terms import parse_field_term

ORDERS: dict[str, Any] = {
    "e1": {"customer": {"name": "Ada Lovelace"}, "total": 12, "note": "50%_off"},
    "e2": {"customer": {"name": "ada"}, "total": 99.5, "note": "x"},
    "e3": {"customer": {"name": "Adam"}, "total": "100", "note": None},
    "e4": {"customer": {"name": "Bob"}, "total": True, "note": 'say "hi"'},
}


class SearchFormCases(StoreCase):
    """list_executions with `=` on text ignoring case, `^=`, `~=`, `>`, `>=`, `<`, `<=` and `text:`."""

    async def matching(self, fx: StoreFixture, *terms: str) -> set[str]:
        page = await fx.store.list_executions(None, fields=[parse_field_term(t) for t in terms])
        assert page.total == len(page.items), (terms, page)
        return fx.ids(page)

    async def seed_orders(self, fx: StoreFixture) -> None:
        for eid, order in ORDERS.items():
            await fx.mk_execution(eid, fields={"order": spi.FieldData.of(order, "Order")})

    async def test_search_equal_text_ignores_case(self, fx: StoreFixture) -> None:
        await self.seed_orders(fx)
        assert await self.matching(fx, "field:order.customer.name=ADA") == {"e2"}
        assert await self.matching(fx, 'field:order.customer.name="ada lovelace"') == {"e1"}
        assert await self.matching(fx, "field:order.customer.name=bOB") == {"e4"}

    async def test_search_prefix_and_contains_ignore_case(self, fx: StoreFixture) -> None:
        await self.seed_orders(fx)
        assert await self.matching(fx, "field:order.customer.name^=ad") == {"e1", "e2", "e3"}
        assert await self.matching(fx, "field:order.customer.name^=ADA") == {"e1", "e2", "e3"}
        assert await self.matching(fx, "field:order.customer.name^=love") == set()
        assert await self.matching(fx, "field:order.customer.name~=LOVE") == {"e1"}
        assert await self.matching(fx, "field:order.customer.name~=a") == {"e1", "e2", "e3"}

    async def test_search_text_forms_match_text_only_and_literally(self, fx: StoreFixture) -> None:
        await self.seed_orders(fx)
        assert await self.matching(fx, "field:order.total^=10") == {"e3"}  # the text "100", not a number
        assert await self.matching(fx, "field:order.total~=9") == set()  # 99.5 is a number
        assert await self.matching(fx, "field:order.note~=%_") == {"e1"}  # % and _ are themselves
        assert await self.matching(fx, "field:order.note~=0_") == set()
        assert await self.matching(fx, 'field:order.note~="\\"hi"') == {"e4"}
        assert await self.matching(fx, "field:order.note^=.") == set()  # no regex either

    async def test_search_numbers_by_range(self, fx: StoreFixture) -> None:
        await self.seed_orders(fx)
        assert await self.matching(fx, "field:order.total>12") == {"e2"}  # not the text "100", not true
        assert await self.matching(fx, "field:order.total>=12") == {"e1", "e2"}
        assert await self.matching(fx, "field:order.total<99.5") == {"e1"}
        assert await self.matching(fx, "field:order.total<=99.5") == {"e1", "e2"}
        assert await self.matching(fx, "field:order.total>=-1e2", "field:order.total<13") == {"e1"}

    async def test_search_by_range_finds_numbers_however_they_were_recorded(self, fx: StoreFixture) -> None:
        """A number given at the start, recorded by a step, delivered by a signal; nested in objects and
        arrays, under a key of any script, a whole value, or past 64 bits: each found by range at its path."""
        lines = {"lines": [{"qty": 1}, {"qty": 7}], "prix €": 2.5, "big": 10**40}
        await fx.mk_execution("started", fields={"order": spi.FieldData.of(lines, "Order")})
        await fx.mk_execution("stepped")
        await fx.mk_field("stepped", "order", {"lines": [{"qty": 3}], "prix €": 9})
        await fx.mk_execution("signalled")
        assert await fx.deliver("signalled", "order", 8, tag="int") == spi.Delivered()
        assert await self.matching(fx, "field:order.lines.1.qty>5") == {"started"}
        assert await self.matching(fx, "field:order.lines.0.qty>=1", "field:order.lines.0.qty<2") == {
            "started"
        }
        assert await self.matching(fx, "field:order.lines.0.qty>2") == {"stepped"}
        assert await self.matching(fx, 'field:order."prix €"<=2.5') == {"started"}
        assert await self.matching(fx, "field:order.big>1e39") == {"started"}
        assert await self.matching(fx, "field:order>=8") == {"signalled"}
        assert await self.matching(fx, "field:order.lines.qty>0") == set()  # strict: an array is no object

    async def test_search_by_range_forgets_a_purged_executions_numbers(self, fx: StoreFixture) -> None:
        """Purged, then created again under the same id with another value: the old value is not found."""
        await fx.mk_execution("again", fields={"order": spi.FieldData.of({"total": 900}, "Order")})
        await fx.terminate("again", spi.Completed())
        await fx.clock.advance(10)
        assert await fx.store.purge_ended(ended_before=fx.clock.now(), limit=10) == 1
        await fx.mk_execution("again", fields={"order": spi.FieldData.of({"total": 1}, "Order")})
        assert await self.matching(fx, "field:order.total>=900") == set()
        assert await self.matching(fx, "field:order.total<2") == {"again"}

    async def test_search_text_term_reads_failure_and_stop_messages(self, fx: StoreFixture) -> None:
        await fx.mk_execution("f1", status=spi.Failed("Card DECLINED by issuer", "PaymentDeclined"))
        stop = spi.Stopped("F0001", "ship", "KeyError: 'carrier'", "trace declined")
        await fx.mk_execution("s1", status=stop)
        await fx.mk_execution("c1", status=spi.Cancelled("declined by ops"))
        await fx.mk_execution("r1")
        assert await self.matching(fx, "text:declined") == {"f1"}  # a cancel's reason is not searched
        assert await self.matching(fx, "text:keyerror") == {"s1"}
        assert await self.matching(fx, 'text:"card declined"') == {"f1"}
        assert await self.matching(fx, "text:'carrier'") == {"s1"}
        assert await self.matching(fx, "text:declined", "text:issuer") == {"f1"}
        assert await self.matching(fx, "text:%") == set()
