"""The OpenAPI document and the interactive docs: each workflow's inputs carry their real JSON schema."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.api.client import Live

TOKEN: dict[str, str] = {}


def fetch(url: str, token: str | None = None) -> tuple[int, str]:
    """GET `url` as the operator (or with `token`; "" for nobody)."""
    token = TOKEN["operator"] if token is None else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


@pytest.fixture(autouse=True)
def _operator_token(live: Live) -> None:
    TOKEN["operator"] = live.credentials["operator_token"]


def resolve(document: dict[str, Any], ref: str) -> Any:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def refs_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == "$ref"] + [r for v in value.values() for r in refs_in(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs_in(v)]
    return []


def test_document_lists_every_route(live: Live) -> None:
    status, text = fetch(f"{live.base}/api/openapi.json")
    document = json.loads(text)
    assert status == 200
    assert {
        ("get", "/api/v1/workflows"),
        ("get", "/api/v1/workflows/{workflow_id}"),
        ("get", "/api/v1/workflows/{workflow_id}/diagram"),
        ("post", "/api/v1/workflows/{workflow_id}/executions"),
        ("get", "/api/v1/workflows/{workflow_id}/parked"),
        ("get", "/api/v1/executions/{execution_id}"),
        ("get", "/api/v1/executions/{execution_id}/inputs"),
        ("get", "/api/v1/executions/{execution_id}/history"),
        ("get", "/api/v1/executions/{execution_id}/diagram"),
        ("post", "/api/v1/executions/{execution_id}/signal/{name}"),
        ("post", "/api/v1/executions/{execution_id}/cancel"),
        ("post", "/api/v1/executions/cancel"),
        ("post", "/api/v1/executions/search"),
        ("get", "/api/v1/executions"),
        ("post", "/api/v1/executions/{execution_id}/resume"),
        ("post", "/api/v1/executions/{execution_id}/answer/{node}"),
        ("post", "/api/v1/executions/{execution_id}/end"),
        ("get", "/api/v1/health"),
        ("get", "/api/v1/activity"),
    } <= {(method, path) for path, item in document["paths"].items() for method in item}
    assert set(document["components"]["securitySchemes"]) == {"BearerToken", "SessionCookie"}
    for ref in refs_in(document):
        assert resolve(document, ref) is not None, ref


def test_each_workflow_start_has_its_input_schemas(live: Live) -> None:
    document = json.loads(fetch(f"{live.base}/api/openapi.json")[1])
    operation = document["paths"]["/api/v1/workflows/approval/executions"]["post"]
    body = resolve(document, operation["requestBody"]["content"]["application/json"]["schema"]["$ref"])

    assert operation["operationId"] == "start_approval"
    assert body["properties"]["inputs"]["anyOf"][1] == {"type": "null"}
    no_nul = "^[^\\u0000]*$"
    assert body["properties"]["inputs"]["anyOf"][0] == {
        "type": "object",
        "title": "Inputs of approval",
        "properties": {
            "order": {
                "properties": {
                    "id": {"minLength": 1, "title": "Id", "type": "string", "pattern": no_nul},
                    "quantity": {"minimum": 1, "title": "Quantity", "type": "integer"},
                },
                "required": ["id", "quantity"],
                "title": "approval_order",
                "type": "object",
                "propertyNames": {"pattern": no_nul},
            },
            "approved": {"type": "boolean"},
        },
        "additionalProperties": False,
    }
    greet = document["paths"]["/api/v1/workflows/greet/executions"]["post"]
    greet_body = resolve(document, greet["requestBody"]["content"]["application/json"]["schema"]["$ref"])
    assert greet_body["properties"]["inputs"]["anyOf"][0]["properties"] == {
        "name": {"type": "string", "pattern": no_nul}
    }


def test_nested_models_move_into_components(live: Live) -> None:
    document = json.loads(fetch(f"{live.base}/api/openapi.json")[1])
    body = document["components"]["schemas"]["StartRequest_shipping"]
    parcel = body["properties"]["inputs"]["anyOf"][0]["properties"]["parcel"]

    assert parcel["properties"]["address"] == {"$ref": "#/components/schemas/shipping_parcel_Address"}
    no_nul = "^[^\\u0000]*$"
    assert document["components"]["schemas"]["shipping_parcel_Address"] == {
        "properties": {
            "street": {"title": "Street", "type": "string", "pattern": no_nul},
            "country": {"default": "NL", "title": "Country", "type": "string", "pattern": no_nul},
        },
        "required": ["street"],
        "title": "shipping_parcel_Address",
        "type": "object",
        "propertyNames": {"pattern": no_nul},
    }


def test_interactive_docs(live: Live) -> None:
    status, text = fetch(f"{live.base}/api/docs")
    assert status == 200
    assert "openapi.json" in text


def test_document_and_docs_need_a_caller(live: Live) -> None:
    for path in ("/api/openapi.json", "/api/docs"):
        status, text = fetch(f"{live.base}{path}", token="")
        assert (status, json.loads(text)["code"]) == (401, "unauthenticated")
        assert fetch(f"{live.base}{path}", token="fd_wrong")[0] == 401


def test_operation_ids_are_verbs(live: Live) -> None:
    document = json.loads(fetch(f"{live.base}/api/openapi.json")[1])
    ids = {
        op["operationId"]
        for path, item in document["paths"].items()
        for op in item.values()
        if "{workflow_id}" in path or not path.startswith("/api/v1/workflows/")
    }
    assert ids == {
        "list_workflows",
        "describe_workflow",
        "draw_workflow",
        "draw_workflow_version",
        "start_execution",
        "list_parked_executions",
        "search_executions",
        "list_executions",
        "cancel_all_executions",
        "describe_execution",
        "list_execution_inputs",
        "read_execution_history",
        "draw_execution",
        "signal_execution",
        "cancel_execution",
        "resume_execution",
        "answer_node",
        "end_execution",
        "check_health",
        "list_activity",
        "act_on_matching_executions",
        "describe_operation",
        "list_schedules",
        "list_limits",
        "show_schedule",
        "create_schedule",
        "pause_schedule",
        "resume_schedule",
        "trigger_schedule",
        "delete_schedule",
        "backfill_schedule",
        "list_rate_limits",
    }


def test_schema_titles_are_unique(live: Live) -> None:
    """Generators name classes by title: fulfilment's and follow_up's `Item` must not collide."""
    schemas = json.loads(fetch(f"{live.base}/api/openapi.json")[1])["components"]["schemas"]
    titles = [schema.get("title") for schema in schemas.values()]
    assert len(titles) == len(set(titles))
    assert {"fulfilment_order_Item", "follow_up_order_Item"} <= set(titles)


def test_the_document_says_what_the_server_refuses(live: Live) -> None:
    document = json.loads(fetch(f"{live.base}/api/openapi.json")[1])
    schemas = document["components"]["schemas"]
    search = schemas["SearchRequest"]["properties"]
    assert (search["offset"]["minimum"], search["offset"]["type"]) == (0, "integer")
    assert search["idPrefix"]["anyOf"][0] == {"type": "string", "pattern": "^[^\\u0000]*$"}
    assert search["status"]["anyOf"][0]["pattern"].startswith("^(?:running|completed|")
    new_id = schemas["StartRequest"]["properties"]["executionId"]["anyOf"][0]
    assert (new_id["minLength"], new_id["maxLength"], new_id["pattern"][:4]) == (1, 200, "^(?:")
    history = document["paths"]["/api/v1/executions/{execution_id}/history"]["get"]["parameters"]
    by_name = {p["name"]: p["schema"] for p in history}
    assert by_name["offset"]["minimum"] == 0
    assert by_name["execution_id"] == {
        "type": "string",
        "title": "Execution Id",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[^\\u0000]*$",
    }
