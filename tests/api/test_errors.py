"""The bad-input table and every route's refusals, against the live server. Each refusal is
`{error, code, detail}` with the status of spec §1 (400 where ninja would say 422)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.api.client import ApiClient, Response


def refused(reply: Response, status: int, code: str) -> dict[str, Any]:
    """Assert the refusal's status, its code and the error body's shape; answer the body."""
    body = reply.body
    assert (reply.status, body.get("code")) == (status, code), reply.text
    assert set(body) == {"error", "code", "detail"}
    assert isinstance(body["error"], str)
    assert body["error"]
    return body


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_unknown_workflow_is_404(operator: ApiClient) -> None:
    body = refused(operator.get("/workflows/nope"), 404, "workflow_not_registered")
    assert body["detail"]["workflow_id"] == "nope"
    refused(operator.post("/workflows/nope/executions", {}), 404, "workflow_not_registered")
    refused(operator.get("/workflows/nope/diagram"), 404, "workflow_not_registered")
    refused(operator.get("/workflows/nope/parked"), 404, "workflow_not_registered")


def test_unknown_execution_is_404(operator: ApiClient) -> None:
    body = refused(operator.get("/executions/never-was"), 404, "execution_not_found")
    assert body["detail"] == {"execution_id": "never-was"}
    refused(operator.get("/executions/never-was/inputs"), 404, "execution_not_found")
    refused(operator.get("/executions/never-was/diagram"), 404, "execution_not_found")
    refused(operator.post("/executions/never-was/signal/name", raw=b'"x"'), 404, "execution_not_found")
    refused(operator.post("/executions/never-was/signal/name", raw=b"{nope"), 404, "execution_not_found")
    refused(operator.post("/executions/never-was/resume", {}), 404, "execution_not_found")
    refused(operator.post("/executions/never-was/answer/boom", {}), 404, "execution_not_found")
    refused(operator.post("/executions/never-was/end", {"reason": "r"}), 404, "execution_not_found")
    # The names of the literal routes are execution ids like any other when read.
    refused(operator.get("/executions/search"), 404, "execution_not_found")
    refused(operator.get("/executions/cancel"), 404, "execution_not_found")


def test_duplicate_execution_id_is_409(operator: ApiClient) -> None:
    eid = new_id("twice")
    assert operator.post("/workflows/holdable/executions", {"executionId": eid}).status == 200
    body = refused(
        operator.post("/workflows/holdable/executions", {"executionId": eid}), 409, "duplicate_execution"
    )
    assert body["detail"] == {"execution_id": eid}


def test_start_refuses_bad_inputs_and_writes_nothing(operator: ApiClient) -> None:
    eid = new_id("refused")
    undeclared = operator.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"nom": "x"}})
    body = refused(undeclared, 400, "invalid_input")
    assert body["detail"] == {"name": "nom", "declared": ["name"]}
    refused(
        operator.post(
            "/workflows/approval/executions", {"executionId": eid, "inputs": {"order": {"id": ""}}}
        ),
        400,
        "invalid_input",
    )
    refused(operator.post("/workflows/greet/executions", raw=b'{"inputs": '), 400, "malformed_body")
    refused(operator.post("/workflows/greet/executions", {"inputs": [1, 2]}), 400, "invalid_request")
    refused(operator.post("/workflows/greet/executions", {"surprise": 1}), 400, "invalid_request")
    refused(operator.get(f"/executions/{eid}"), 404, "execution_not_found")


def test_start_refuses_a_priority_out_of_range_and_writes_nothing(operator: ApiClient) -> None:
    eid = new_id("priority")
    for priority in (101, -101, 1.5, "high", True):
        body = refused(
            operator.post("/workflows/holdable/executions", {"executionId": eid, "priority": priority}),
            400,
            "invalid_request",
        )
        assert "priority" in str(body), body
    refused(operator.get(f"/executions/{eid}"), 404, "execution_not_found")


def test_signal_refusals(operator: ApiClient) -> None:
    eid = new_id("signals")
    operator.post("/workflows/approval/executions", {"executionId": eid})
    operator.until_waiting(eid, "order")

    body = refused(operator.post(f"/executions/{eid}/signal/shoe", raw=b"1"), 400, "invalid_input")
    assert body["detail"] == {"name": "shoe", "declared": ["order", "approved"]}
    refused(
        operator.post(f"/executions/{eid}/signal/order", raw=b'{"id": "o", "quantity": 0}'),
        400,
        "invalid_input",
    )
    refused(operator.post(f"/executions/{eid}/signal/order", raw=b"{not json"), 400, "malformed_body")
    refused(operator.post(f"/executions/{eid}/signal/order", raw=b""), 400, "malformed_body")

    assert operator.post(f"/executions/{eid}/signal/order", raw=b'{"id": "o", "quantity": 1}').status == 200
    refused(
        operator.post(f"/executions/{eid}/signal/order", raw=b'{"id": "o", "quantity": 2}'),
        409,
        "already_delivered",
    )


def test_signal_to_a_terminal_execution_is_409(operator: ApiClient) -> None:
    eid = new_id("ended")
    operator.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"name": "di"}})
    operator.until_status(eid, "completed")

    body = refused(operator.post(f"/executions/{eid}/signal/name", raw=b'"again"'), 409, "execution_terminal")
    assert body["detail"] == {"execution_id": eid, "status": "completed"}
    refused(operator.post(f"/executions/{eid}/signal/name", raw=b"{bad"), 409, "execution_terminal")


@pytest.mark.parametrize(
    ("search", "code"),
    [
        ({"status": "sideways"}, "invalid_filter"),
        ({"status": "failed:"}, "invalid_filter"),
        ({"status": "waiting:"}, "invalid_filter"),
        ({"status": "stopped:"}, "invalid_filter"),
        ({"where": ["field:order.id"]}, "invalid_filter"),
        ({"where": ["order.id=o-1"]}, "invalid_filter"),
        ({"where": ["field:order.id={}"]}, "invalid_filter"),
        ({"where": [r'field:order.id="\u0000"']}, "invalid_filter"),
        ({"where": [r'field:order.id="\ud800"']}, "invalid_filter"),
        ({"where": ["field:order.id=\u0000"]}, "nul_character"),
        ({"where": "field:order.id=o-1"}, "invalid_request"),
        ({"offset": -1}, "invalid_request"),
        ({"limit": "many"}, "invalid_request"),
        ({"colour": "red"}, "invalid_request"),
        ({"offset": False}, "invalid_request"),
        ({"limit": "7"}, "invalid_request"),
    ],
)
def test_search_refusals(operator: ApiClient, search: dict[str, Any], code: str) -> None:
    refused(operator.post("/executions/search", search), 400, code)


def test_search_accepts_every_wire_word(operator: ApiClient) -> None:
    words = ["running", "completed", "cancelled", "cancelling", "compensating", "failed", "failed:Oops"]
    words += ["sleeping", "waiting", "waiting:go", "stopped", "stopped:F0001"]
    for word in words:
        assert operator.post("/executions/search", {"status": word}).status == 200, word


def test_negative_history_offset_is_400(operator: ApiClient) -> None:
    refused(operator.get("/executions/any/history", query="offset=-1"), 400, "invalid_request")
    refused(operator.get("/executions/any/history", query="limit=ten"), 400, "invalid_request")


def test_malformed_json_bodies_are_400(operator: ApiClient) -> None:
    for path in ("/executions/search", "/executions/cancel", "/executions/x/cancel", "/executions/x/resume"):
        refused(operator.post(path, raw=b"{oops"), 400, "malformed_body")


def test_nul_characters_are_refused_before_the_store(operator: ApiClient) -> None:
    """PostgreSQL text cannot hold U+0000: the caller hears 400, not the database's failure."""
    refused(operator.get("/executions/a%00b"), 400, "nul_character")
    refused(operator.get("/workflows/greet/diagram", query="format=%00"), 400, "nul_character")
    refused(operator.post("/executions/x/cancel", {"reason": "a\x00b"}), 400, "nul_character")
    refused(operator.post("/executions/search", {"idPrefix": "\x00"}), 400, "nul_character")
    assert operator.post("/executions/search", {"idPrefix": "a\\u0000"}).status == 200


def test_huge_paging_numbers_are_400(operator: ApiClient) -> None:
    refused(operator.post("/executions/search", {"limit": 2**70}), 400, "invalid_request")
    refused(operator.get("/executions/x/history", query=f"offset={2**70}"), 400, "invalid_request")


def test_input_values_are_judged_as_json(operator: ApiClient) -> None:
    """`0` is not a boolean and `"2"` not an integer, though pydantic's lax mode would take them."""
    body = {"inputs": {"approved": 0}}
    refused(operator.post("/workflows/approval/executions", body), 400, "invalid_input")
    refused(
        operator.post("/workflows/approval/executions", {"inputs": {"order": {"id": "o", "quantity": "2"}}}),
        400,
        "invalid_input",
    )
    eid = new_id("strict")
    operator.post(
        "/workflows/approval/executions",
        {"executionId": eid, "inputs": {"order": {"id": "o", "quantity": 2}}},
    )
    operator.until_waiting(eid, "approved")
    refused(operator.post(f"/executions/{eid}/signal/approved", raw=b'"true"'), 400, "invalid_input")
    assert operator.post(f"/executions/{eid}/signal/approved", raw=b"false").status == 200
    assert operator.until_status(eid, "completed")["status"] == "completed"


def test_search_names_a_field_path_the_workflow_cannot_record(operator: ApiClient) -> None:
    """Issue 29: a path no version of the chosen workflow can hold is refused, naming it and the nearest
    paths that exist, instead of answering "no execution matches"."""
    body = refused(
        operator.post("/executions/search", {"workflowId": "approval", "where": ["field:order.quantty>1"]}),
        400,
        "invalid_filter",
    )
    assert "records no path order.quantty (nearest: order.quantity" in body["error"]
    body = refused(
        operator.get("/executions", query="workflow=approval&q=field:bogus.x%3D1"), 400, "invalid_filter"
    )
    assert "'approval' records no path bogus.x (nearest: " in body["error"]
    # without a workflow, or on a path the type leaves open, the search runs (and may find nothing)
    assert operator.post("/executions/search", {"where": ["field:bogus.x=1"]}).status == 200
