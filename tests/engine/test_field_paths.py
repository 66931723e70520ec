"""Which field paths a workflow can record (issue 29): a search naming one no version can hold is refused,
naming it and the nearest that exist; what a type leaves open is never refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowdeck.engine import Flow, field_paths
from flowdeck.store import spi
from flowdeck.store.field_terms import parse_field_term


class Address(BaseModel):
    street: str
    country: str = "NL"


class Item(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    customer: str
    address: Address | None = None
    items: list[Item] = []
    tags: dict[str, int] = {}
    extra: Any = None


def _pay(ctx: object) -> None:
    return None


FLOW = (
    Flow.init("orders")
    .input("order", Order)
    .input("note", str)
    .step("pay", _pay)
    .output("total", lambda ctx: 1)
)
NEWER = Flow.init("orders").input("order", Order).input("coupon", str).output("total", lambda ctx: 1)


def check(term: str, *flows: Flow) -> None:
    field_paths.check_terms("orders", flows or (FLOW,), [parse_field_term(term)])


@pytest.mark.parametrize(
    "term",
    [
        "field:order.customer^=ad",
        "field:order.address.street=x",  # through an optional nested model ($ref under anyOf)
        "field:order.items.0.sku=s1",
        "field:order.items.3.qty>1",
        "field:order.tags.anything>=2",  # a mapping holds any key
        "field:order.extra.deep.down=1",  # Any leaves the path open
        "field:pay~charge_id.id=ch",  # a step's keyed output: no type declares it
        "field:order=1",
        "field:total=1",
        "text:declined",
    ],
)
def test_a_path_the_types_allow_is_searched(term: str) -> None:
    check(term)


@pytest.mark.parametrize(
    ("term", "said"),
    [
        ("field:order.custmer=ada", "records no path order.custmer (nearest: order.customer"),
        ("field:ordr.customer=ada", "records no path ordr.customer (nearest: order.customer"),
        ("field:bogus.x=1", "workflow 'orders' records no path bogus.x (nearest: "),
        ("field:order.address.streat=x", "nearest: order.address.street"),
        ("field:order.items.sku=s1", "records no path order.items.sku (nearest: order.items.0.sku"),
        ("field:note.length=1", "records no path note.length"),  # text holds no keys
        ("field:order.customer.0=a", "records no path order.customer.0"),
    ],
)
def test_a_path_no_version_can_record_is_refused_naming_the_nearest(term: str, said: str) -> None:
    with pytest.raises(spi.FilterParseError, match=said.replace("(", r"\(").replace(".", r"\.")):
        check(term)


def test_any_version_that_can_record_the_path_admits_it() -> None:
    check("field:coupon=x", FLOW, NEWER)
    check("field:note=x", FLOW, NEWER)
    with pytest.raises(spi.FilterParseError, match="coupon"):
        check("field:coupon=x", FLOW)


def test_a_workflow_this_process_does_not_serve_is_not_checked() -> None:
    field_paths.check_terms("elsewhere", (), [parse_field_term("field:bogus.x=1")])
