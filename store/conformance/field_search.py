"""Search by a recorded value: list_executions with `fields` terms (a Flowdeck addition)."""

from __future__ import annotations

from typing import Any

from flowdeck.store import spi
from flowdeck.store.conformance.case import F, StoreCase
from flowdeck.store.conformance.support import WF1, WF2, StoreFixture
from flowdeck.store.field_terms import parse_field_term

ORDER_ADA = {"customer": "ada", "total": 12, "paid": True, "note": None, "items": [{"sku": "a-1"}]}
ORDER_BOB = {"customer": "bob", "total": 12.5, "paid": False, "note": "1", "items": [{"sku": "b-1"}]}


class FieldSearchCases(StoreCase):
    """list_executions(fields=…): exact typed match at a JSON path of a recorded value, ANDed with the
    other narrowings, before paging, with the exact total. Values in seed fields, inputs delivered by
    signal and step outputs are all searched alike."""

    async def found(self, fx: StoreFixture, *terms: str, **narrow: Any) -> set[str]:
        matches = [parse_field_term(t) for t in terms]
        page = await fx.store.list_executions(narrow.pop("flow_id", None), fields=matches, **narrow)
        assert page.total == len(page.items)
        return fx.ids(page)

    async def orders(self, fx: StoreFixture) -> None:
        """e1 holds ada's order as a seed field, e2 bob's delivered by signal, e3 a step's output only."""
        await fx.mk_execution("e1", fields={"order": spi.FieldData.of(ORDER_ADA, "Order")})
        await fx.mk_execution("e2")
        assert await fx.deliver("e2", "order", ORDER_BOB, "Order") == spi.Delivered()
        await fx.mk_execution("e3", WF2)
        await fx.mk_field("e3", "charge~id", {"id": "ch_1", "amount": 12}, "Charge")

    async def test_field_search_nested_path_equals_text(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        assert await self.found(fx, "field:order.customer=ada") == {"e1"}
        assert await self.found(fx, "field:order.customer=bob") == {"e2"}
        assert await self.found(fx, "field:order.customer=eve") == set()
        assert await self.found(fx, "field:order.items.0.sku=b-1") == {"e2"}

    async def test_field_search_reads_step_outputs_by_durable_key(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        assert await self.found(fx, "field:charge~id.id=ch_1") == {"e3"}
        assert await self.found(fx, "field:charge~id.amount=12") == {"e3"}
        assert await self.found(fx, "field:order.amount=12") == set()  # the field name is part of it

    async def test_field_search_numbers_are_not_text(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        assert await self.found(fx, "field:order.total=12") == {"e1"}
        assert await self.found(fx, "field:order.total=12.0") == {"e1"}  # one number, two spellings
        assert await self.found(fx, 'field:order.total="12"') == set()
        assert await self.found(fx, "field:order.total=12.5") == {"e2"}
        assert await self.found(fx, 'field:order.note="1"') == {"e2"}
        assert await self.found(fx, "field:order.note=1") == set()

    async def test_field_search_true_false_null_are_typed(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        assert await self.found(fx, "field:order.paid=true") == {"e1"}
        assert await self.found(fx, "field:order.paid=false") == {"e2"}
        assert await self.found(fx, "field:order.paid=1") == set()
        assert await self.found(fx, 'field:order.paid="true"') == set()
        assert await self.found(fx, "field:order.note=null") == {"e1"}  # present and null, not missing

    async def test_field_search_missing_path_matches_nothing(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        assert await self.found(fx, "field:order.nope=null") == set()
        assert await self.found(fx, "field:order.customer.first=ada") == set()  # text has no keys
        assert await self.found(fx, "field:order.items.5.sku=a-1") == set()
        assert await self.found(fx, 'field:order.items."0".sku=a-1') == set()  # a key, not an index
        assert await self.found(fx, "field:nothing.customer=ada") == set()

    async def test_field_search_arrays_are_not_unwrapped(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", fields={"tags": spi.FieldData.of({"list": ["a", "b"]}, "T")})
        await fx.mk_execution("e2", fields={"tags": spi.FieldData.of({"list": "a"}, "T")})
        await fx.mk_execution("e3", fields={"tags": spi.FieldData.of(["a"], "T")})
        assert await self.found(fx, "field:tags.list=a") == {"e2"}
        assert await self.found(fx, "field:tags.list.1=b") == {"e1"}
        assert await self.found(fx, "field:tags.0=a") == {"e3"}
        assert await self.found(fx, "field:tags=a") == set()  # a whole value that is an array

    async def test_field_search_whole_scalar_value(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", fields={"approval": spi.FieldData.of("yes", "str")})
        await fx.mk_execution("e2", fields={"approval": spi.FieldData.of(3, "int")})
        assert await self.found(fx, "field:approval=yes") == {"e1"}
        assert await self.found(fx, "field:approval=3") == {"e2"}

    async def test_field_search_terms_and_together(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        await fx.mk_execution("e4", fields={"order": spi.FieldData.of({**ORDER_ADA, "total": 30}, "Order")})
        assert await self.found(fx, "field:order.customer=ada") == {"e1", "e4"}
        assert await self.found(fx, "field:order.customer=ada", "field:order.total=30") == {"e4"}
        assert await self.found(fx, "field:order.customer=bob", "field:order.total=30") == set()

    async def test_field_search_combines_with_status_workflow_and_prefix(self, fx: StoreFixture) -> None:
        await self.orders(fx)
        await fx.mk_execution("x4", fields={"order": spi.FieldData.of(ORDER_ADA, "Order")})
        await fx.terminate("x4", spi.Completed())
        term = "field:order.customer=ada"
        assert await self.found(fx, term) == {"e1", "x4"}
        assert await self.found(fx, term, filter=F.Running()) == {"e1"}
        assert await self.found(fx, term, filter=F.Completed()) == {"x4"}
        assert await self.found(fx, term, id_prefix="x") == {"x4"}
        assert await self.found(fx, term, flow_id=WF2) == set()
        assert await self.found(fx, term, flow_id=WF1) == {"e1", "x4"}

    async def test_field_search_total_counts_every_match_before_paging(self, fx: StoreFixture) -> None:
        for i in range(7):
            customer = "ada" if i % 2 == 0 else "bob"
            await fx.mk_execution(f"e{i}", fields={"order": spi.FieldData.of({"customer": customer}, "O")})
        term = parse_field_term("field:order.customer=ada")
        page = await fx.store.list_executions(None, None, 2, 1, fields=[term])
        assert page.total == 4
        assert [s.execution_id for s in page.items] == ["e4", "e2"]  # newest first, after skipping e6
        past = await fx.store.list_executions(None, None, 2, 10, fields=[term])
        assert (past.items, past.total) == ([], 4)
        everything = await fx.store.list_executions(None, None, fields=[term])
        assert ([s.execution_id for s in everything.items], everything.total) == (["e6", "e4", "e2", "e0"], 4)

    async def test_field_search_quotes_and_special_characters(self, fx: StoreFixture) -> None:
        odd = {"say": 'she said "hi" \\ 100% _ok_', "a.b c": "dotted key", "name": "Zoë ✓"}
        await fx.mk_execution("e1", fields={"doc": spi.FieldData.of(odd, "Doc")})
        await fx.mk_execution("e2", fields={"doc": spi.FieldData.of({"say": "she said"}, "Doc")})
        assert await self.found(fx, r'field:doc.say="she said \"hi\" \\ 100% _ok_"') == {"e1"}
        assert await self.found(fx, 'field:doc.say="she said"') == {"e2"}
        assert await self.found(fx, 'field:doc.say="she said%"') == set()  # no wildcards
        assert await self.found(fx, 'field:doc."a.b c"="dotted key"') == {"e1"}
        assert await self.found(fx, "field:doc.name=Zoë ✓".replace(" ", "")) == set()
        assert await self.found(fx, 'field:doc.name="Zoë ✓"') == {"e1"}
        assert await self.found(fx, 'field:doc.say="it\'s"') == set()
