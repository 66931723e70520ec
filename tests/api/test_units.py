"""The API's pieces that need no server: tokens, the error table, input schemas in the document."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth import get_user_model
from pydantic import BaseModel

from console.api import errors as api_errors
from console.api import openapi
from console.models import ApiToken, create_token
from engine import Flow, errors
from store import spi


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
            "title": "Line",
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
                "title": "Basket",
                "type": "object",
            },
            "note": {"type": "string"},
        },
        "additionalProperties": False,
    }
