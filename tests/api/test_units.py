"""The API's pieces that need no server: tokens, the error table, input schemas in the document."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.test import RequestFactory
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowdeck.console import gate, schemas
from flowdeck.console.api import errors as api_errors
from flowdeck.console.api import guard, openapi
from flowdeck.console.models import ApiToken, create_token
from flowdeck.engine import Flow, errors, ids
from flowdeck.store import spi


@pytest.mark.django_db
def test_tokens_are_stored_hashed() -> None:
    user = get_user_model().objects.create_user("tess")

    token = create_token(user, "ci")

    stored = ApiToken.objects.get()
    assert token.startswith("fd_")
    assert len(token) > 40
    assert (stored.user, stored.name, stored.last_used) == (user, "ci", None)
    assert stored.key_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {stored.key_hash, stored.name}
    assert create_token(user, "ci") != token


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (errors.FlowNotRegistered("wf"), (404, "workflow_not_registered")),
        (errors.FlowExecutionNotFound("e"), (404, "execution_not_found")),
        (errors.FlowExecutionTerminal("e", "completed"), (409, "execution_terminal")),
        (errors.FlowDuplicateExecution("e"), (409, "duplicate_execution")),
        (errors.FlowInputError("bad", name="x"), (400, "invalid_input")),
        (errors.FlowAlreadyDelivered("e", "x"), (409, "already_delivered")),
        (errors.FlowNotStopped("e", "running"), (409, "not_stopped")),
        (errors.FlowClaimHeld("e", "w1"), (409, "claim_held")),
        (errors.FlowAlreadyAnswered("e", "n"), (409, "already_answered")),
        (errors.FlowUnknownNode("n"), (404, "node_not_found")),
        (spi.FilterParseError("bad"), (400, "invalid_filter")),
        (spi.FlowStoreError("down"), (503, "store_unavailable")),
        (errors.FlowUnnamed(), (404, "workflow_not_found")),
        (errors.FlowInvalidId("execution id", "a\nb", "bad"), (400, "invalid_id")),
        (guard.BodyTooLarge(10), (413, "body_too_large")),
        (guard.NestingTooDeep(), (400, "nesting_too_deep")),
        (guard.NulCharacter("body"), (400, "nul_character")),
        (guard.LoneSurrogate(), (400, "lone_surrogate")),
    ],
)
def test_error_table(error: Exception, expected: tuple[int, str]) -> None:
    """The most specific entry along the exception's classes wins."""
    assert api_errors._lookup(error) == expected


def test_errors_outside_the_table_are_not_mapped() -> None:
    assert api_errors._lookup(RuntimeError("boom")) is None


class Line(BaseModel):
    sku: str


class Basket(BaseModel):
    lines: list[Line]


def test_input_schemas_move_defs_into_components() -> None:
    flow = Flow.init("shop").input("basket", Basket).input("note", str).output("n", lambda ctx: 1)

    inputs, components = openapi.input_schemas("shop", flow)

    assert components == {
        "shop_basket_Line": {
            "properties": {"sku": {"title": "Sku", "type": "string"}},
            "required": ["sku"],
            "title": "shop_basket_Line",
            "type": "object",
        }
    }
    assert inputs == {
        "type": "object",
        "title": "Inputs of shop",
        "properties": {
            "basket": {
                "properties": {
                    "lines": {
                        "items": {"$ref": "#/components/schemas/shop_basket_Line"},
                        "title": "Lines",
                        "type": "array",
                    }
                },
                "required": ["lines"],
                "title": "shop_basket",
                "type": "object",
            },
            "note": {"type": "string"},
        },
        "additionalProperties": False,
    }


class Item(BaseModel):
    sku: str


class OtherItem(BaseModel):
    code: int


class Order(BaseModel):
    items: list[Item]


class Refill(BaseModel):
    items: list[OtherItem]


def test_every_schema_title_in_the_document_is_unique() -> None:
    """Two workflows each with a model named `Item` (and `Order`): a client generator names classes by
    title, so each gets its own."""
    flows = {
        "shop": Flow.init("shop").input("order", Order).output("n", lambda ctx: 1),
        "store": Flow.init("store").input("order", Refill).output("n", lambda ctx: 1),
    }
    generic = {"post": {"operationId": "start_execution", "parameters": [], "responses": {}}}
    document = {"paths": {"/api/v1/workflows/{workflow_id}/executions": generic}, "components": {}}

    openapi.add_workflow_inputs(document, flows)

    schemas = document["components"]["schemas"]
    titles = [schema["title"] for schema in schemas.values()]
    assert sorted(titles) == ["Start shop", "Start store", "shop_order_Item", "store_order_OtherItem"]
    start = schemas["StartRequest_shop"]["properties"]["inputs"]["anyOf"][0]
    assert start["properties"]["order"]["title"] == "shop_order"


@pytest.mark.parametrize(
    ("body", "too_deep"),
    [
        (b"[" * 64 + b"]" * 64, False),
        (b"[" * 65 + b"]" * 65, True),
        (b'{"a":' * 65 + b"1" + b"}" * 65, True),
        (b'{"a":' * 64 + b"1" + b"}" * 64, False),
        (b"[" * 100_000, True),
        (b'["' + b"[" * 1000 + b'"]', False),
        (rb'["\\", "' + b"{" * 100 + b'"]', False),  # an escaped backslash ends no string early
        (rb'["\"' + b"{" * 100 + b'"]', False),  # nor does an escaped quote
        (b"[" + b"[]," * 100_000 + b"[]]", False),
        (b"{}" * 1000, False),
    ],
)
def test_json_depth_is_counted_on_the_text(body: bytes, too_deep: bool) -> None:
    assert guard.json_depth_exceeds(body) is too_deep


@given(st.text(max_size=12) | st.sampled_from([".", "..", "...", ".a", "a.", "a/b", "\u2028", "\x85"]))
def test_the_documented_id_pattern_is_the_id_rule(value: str) -> None:
    """The `pattern` the document gives a new execution id accepts exactly what engine/ids.py accepts."""
    assert (re.fullmatch(schemas.ID_PATTERN, value) is not None) == (ids.id_problem(value) is None)


def test_the_guard_refuses_from_content_length_before_reading_or_routing() -> None:
    reached: list[HttpRequest] = []

    def downstream(request: HttpRequest) -> HttpResponse:
        reached.append(request)
        return HttpResponse()

    request = RequestFactory().post(
        "/api/v1/executions/search", data=b"", content_type="application/json", CONTENT_LENGTH=str(10**9)
    )
    reply = gate.api(downstream)(request)

    assert (reply.status_code, json.loads(reply.content), reached) == (
        413,
        {
            "error": "the request body is larger than 2621440 bytes",
            "code": "body_too_large",
            "detail": {"limit": 2621440},
        },
        [],
    )


def test_pages_keep_their_own_error_pages_not_the_api_s_json() -> None:
    page = HttpResponseNotFound("<h1>styled</h1>")
    request = RequestFactory().get("/executions/ab")
    assert gate.page(lambda r: page)(request) is page
    assert page["Content-Type"].startswith("text/html")
