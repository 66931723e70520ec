"""Values: what a node records, what downstream nodes read back, and the record bodies see."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from examples.seed import Item, Order, sample_order
from flowdeck.engine import FlowValueError, values
from flowdeck.engine.values import Record
from flowdeck.store.spi import FieldData


def test_a_pydantic_model_round_trips_through_its_declared_type():
    order = sample_order()
    field = values.encode("order", order, Order)
    assert field == FieldData(
        '{"id":"o-1017","customer":"ada","items":[{"sku":"widget","qty":3,"price":400}]}', "Order"
    )
    back = values.decode(field, Order)
    assert back == order
    assert type(back) is Order


def test_a_list_of_models_round_trips():
    orders = [sample_order("o-1"), sample_order("o-2", Item(sku="gadget", qty=1, price=999))]
    field = values.encode("orders", orders, list[Order])
    assert field.tag == "list[Order]"
    assert values.decode(field, list[Order]) == orders
    assert values.round_trip("orders", orders, list[Order]) == orders


def test_the_round_trip_is_what_downstream_sees_not_the_object_returned():
    order = sample_order()
    back = values.round_trip("order", order, Order)
    assert back == order
    assert back is not order
    # A declared type normalises what a body returned, as a replay would.
    assert values.round_trip("when", "2026-01-02T03:04:05Z", datetime) == datetime(
        2026, 1, 2, 3, 4, 5, tzinfo=UTC
    )
    assert values.round_trip("pair", (1, "a"), tuple[int, str]) == (1, "a")
    assert values.round_trip("count", 3, int) == 3


def test_undeclared_json_native_values_are_stored_as_json_and_keep_key_order():
    value = {"b": [1, 2.5, None, True, "x"], "a": {"nested": []}}
    field = values.encode("summary", value, None)
    assert field == FieldData('{"b":[1,2.5,null,true,"x"],"a":{"nested":[]}}', "json")
    back = values.decode(field)
    assert back == value
    assert list(back) == ["b", "a"]


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda children: st.lists(children) | st.dictionaries(st.text(), children),
        max_leaves=20,
    )
)
def test_every_json_native_value_round_trips_undeclared(value):
    assert values.round_trip("v", value) == value


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (sample_order(), "value is of type Order, which is not JSON-native"),
        ((1, 2), "value is of type tuple, which is not JSON-native"),
        ({1, 2}, "value is of type set, which is not JSON-native"),
        ({"a": [1, object()]}, "value['a'][1] is of type object, which is not JSON-native"),
        ({1: "one"}, "value has a non-str key 1"),
        (float("nan"), "value is nan, which JSON cannot hold"),
    ],
)
def test_an_undeclared_value_that_is_not_json_native_is_refused_naming_the_node_and_type(value, detail):
    with pytest.raises(FlowValueError) as raised:
        values.encode("charge", value, None)
    assert str(raised.value) == (
        f"node 'charge' produced a value that cannot be recorded ({detail}); "
        "declare its type with type=... (a pydantic-validatable type) or return JSON-native data"
    )
    assert raised.value.node == "charge"


def test_a_value_that_does_not_fit_its_declared_type_is_refused():
    with pytest.raises(FlowValueError) as raised:
        values.encode("total", "many", int)
    assert str(raised.value).startswith(
        "node 'total' produced a value that cannot be recorded "
        "(it is not a valid int: value: Input should be a valid integer"
    )


@pytest.mark.parametrize(
    ("declared", "tag"),
    [
        (None, "json"),
        (int, "int"),
        (str, "str"),
        (type(None), "None"),
        (Order, "Order"),
        (list[Order], "list[Order]"),
        (dict[str, list[Item]], "dict[str, list[Item]]"),
        (tuple[int, ...], "tuple[int, ...]"),
        (int | None, "int | None"),
        (Literal["a", "b"], "Literal['a', 'b']"),
        (Annotated[int, Field(gt=0)], "int"),
    ],
)
def test_tags_are_stable_readable_type_names(declared, tag):
    assert values.type_tag(declared) == tag


def test_json_schema_of_an_input_type():
    schema = values.json_schema(Order)
    assert schema["title"] == "Order"
    assert schema["required"] == ["id", "customer", "items"]
    assert schema["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert values.json_schema(int) == {"type": "integer"}
    assert values.json_schema(None) == {}


def test_adapters_are_built_once_per_type():
    assert values.adapter(list[Order]) is values.adapter(list[Order])


# ------------------------------------------------------------------------------------------ Record


def test_a_record_reads_by_attribute_and_nests_subflow_records():
    record = Record({"order": "o-1"}, total=1200, payment=Record(charge_id="ch-1", order_id="o-1"))
    assert (record.order, record.total, record.payment.charge_id) == ("o-1", 1200, "ch-1")
    assert record["total"] == 1200
    assert "payment" in record
    assert list(record) == ["order", "total", "payment"]
    assert len(record) == 3
    assert record._fields == ("order", "total", "payment")
    assert record == {"order": "o-1", "total": 1200, "payment": {"charge_id": "ch-1", "order_id": "o-1"}}
    assert record._asdict() == {
        "order": "o-1",
        "total": 1200,
        "payment": {"charge_id": "ch-1", "order_id": "o-1"},
    }
    assert repr(Record(a=1)) == "Record(a=1)"


def test_a_missing_field_names_itself_and_what_is_there():
    record = Record(order="o-1", total=1200)
    with pytest.raises(AttributeError) as raised:
        record.totl  # noqa: B018
    assert (
        str(raised.value) == "no field 'totl' in this record (available: order, total); did you mean 'total'?"
    )
    with pytest.raises(AttributeError, match=r"no field 'x' in this record \(available: none\)"):
        Record().x  # noqa: B018
    with pytest.raises(KeyError, match="no field 'charge'"):
        record["charge"]


def test_field_names_never_collide_with_record_helpers():
    record = Record(items=[1], keys="k", values="v", get="g")
    assert (record.items, record.keys, record.values, record.get) == ([1], "k", "v", "g")


def test_a_record_is_read_only_and_copies_on_change():
    record = Record(a=1)
    with pytest.raises(AttributeError, match="a record is read-only; cannot set 'a'"):
        record.a = 2
    assert record._with(b=2) == {"a": 1, "b": 2}
    assert record._merge(Record(a=3)) == {"a": 3}
    assert record == {"a": 1}


def test_a_record_pickles():
    record = Record(a=1, nested=Record(b=[2]))
    assert pickle.loads(pickle.dumps(record)) == record
    assert json.dumps(record._asdict()) == '{"a": 1, "nested": {"b": [2]}}'
