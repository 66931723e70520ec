"""Signal forms generated from JSON schemas, and reading what was typed back into a value."""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, Field

from flowdeck.console import forms
from flowdeck.engine import values


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Line(BaseModel):
    sku: str


class Order(BaseModel):
    id: str = Field(description="the shop's id")
    qty: int = Field(ge=1)
    price: float
    gift: bool = False
    colour: Colour = Colour.RED
    note: str | None = None
    lines: list[Line] = []


def _form(declared: Any) -> forms.SignalForm:
    return forms.signal_form("x", values.json_schema(declared))


def test_an_object_gives_one_field_per_property() -> None:
    form = _form(Order)
    assert form.scalar is False
    assert [(f.name, f.kind, f.required) for f in form.fields] == [
        ("id", "text", True),
        ("qty", "integer", True),
        ("price", "number", True),
        ("gift", "boolean", False),
        ("colour", "choice", False),
        ("note", "text", False),
        ("lines", "json", False),
    ]
    assert form.fields[0].description == "the shop's id"
    assert form.fields[4].choices == ("red", "blue")


def test_a_scalar_gives_one_value_field() -> None:
    form = _form(int)
    assert (form.scalar, [(f.name, f.kind) for f in form.fields]) == (True, [("value", "integer")])


def test_typed_text_becomes_the_value() -> None:
    form = _form(Order)
    posted = {
        "id": "o-1",
        "qty": "2",
        "price": "9.5",
        "gift": "on",
        "colour": "blue",
        "lines": '[{"sku": "a"}]',
    }
    value, errors = forms.read_signal(form, posted, Order)
    assert errors == {}
    assert value == {
        "id": "o-1",
        "qty": 2,
        "price": 9.5,
        "gift": True,
        "colour": "blue",
        "lines": [{"sku": "a"}],
    }


def test_errors_are_placed_on_their_field() -> None:
    form = _form(Order)
    _, errors = forms.read_signal(form, {"id": "", "qty": "x", "price": "1", "lines": "[{"}, Order)
    assert set(errors) == {"id", "qty", "lines"}
    assert errors["qty"] == ("enter a whole number",)
    _, errors = forms.read_signal(
        form, {"id": "o", "qty": "0", "price": "1", "lines": '[{"nope": 1}]'}, Order
    )
    assert errors == {
        "qty": ("Input should be greater than or equal to 1",),
        "lines": ("0.sku: Field required",),
    }
