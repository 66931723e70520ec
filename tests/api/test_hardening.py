"""Hostile requests against the live server: each is a 4xx with the API's error body and records nothing.

Oversized bodies (with and without `Content-Length`), JSON nested past the limit, lone surrogates, ids
that break the id rule or could never be stored, and paths or methods no route takes.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
import uuid
from typing import Any

import pytest

from tests.api.client import ApiClient, Live, Response
from tests.api.test_errors import refused

# Django's DATA_UPLOAD_MAX_MEMORY_SIZE (the project keeps Django's default): the API's body limit.
BODY_LIMIT = 2_621_440
# flowdeck.console.api.guard.MAX_JSON_DEPTH, spelled out: the promise, not whatever the code says today.
MAX_JSON_DEPTH = 64


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def send(
    live: Live,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    token: str | None = None,
    chunked: bool = False,
) -> Response:
    """One request by `http.client`, so the test decides the framing (`Content-Length` or chunked)."""
    url = urllib.parse.urlsplit(live.base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        if chunked:
            pieces = [body[i : i + 65536] for i in range(0, len(body or b""), 65536)]
            conn.request(method, path, body=iter(pieces), headers=headers, encode_chunked=True)
        else:
            conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        return Response(reply.status, reply.read().decode(), dict(reply.getheaders()))
    finally:
        conn.close()


def nested(depth: int, leaf: Any = 1) -> bytes:
    return b"[" * depth + json.dumps(leaf).encode() + b"]" * depth


# ----------------------------------------------------------------------------------------- body size


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("who", ["anonymous", "operator"])
def test_a_body_over_the_limit_is_413_before_anything_reads_it(live: Live, chunked: bool, who: str) -> None:
    token = live.credentials["operator_token"] if who == "operator" else None
    eid = new_id("huge")
    body = json.dumps({"executionId": eid, "inputs": {"name": "x" * BODY_LIMIT}}).encode()
    reply = send(live, "POST", "/api/v1/workflows/greet/executions", body, token=token, chunked=chunked)

    found = refused(reply, 413, "body_too_large")
    assert found["detail"] == {"limit": BODY_LIMIT}
    assert (
        ApiClient(live.base, token=live.credentials["operator_token"]).get(f"/executions/{eid}").status == 404
    )


def test_a_body_at_the_limit_is_read(live: Live) -> None:
    padding = BODY_LIMIT - len(b'{"idPrefix": ""}')
    body = b'{"idPrefix": "' + b"z" * padding + b'"}'
    assert len(body) == BODY_LIMIT
    reply = send(live, "POST", "/api/v1/executions/search", body, token=live.credentials["operator_token"])
    assert (reply.status, reply.body["items"]) == (200, [])


# ------------------------------------------------------------------------------------------- nesting


def test_deep_json_is_400_naming_the_limit_on_every_route(operator: ApiClient) -> None:
    for path in (
        "/executions/search",
        "/executions/cancel",
        "/workflows/greet/executions",
        "/executions/x/end",
    ):
        body = refused(operator.post(path, raw=nested(1000)), 400, "nesting_too_deep")
        assert body["detail"] == {"limit": MAX_JSON_DEPTH}
        assert str(MAX_JSON_DEPTH) in body["error"]
    deep_field = b'{"status": ' + nested(5000) + b"}"
    refused(operator.post("/executions/search", raw=deep_field), 400, "nesting_too_deep")
    # Brackets inside strings are text, not nesting.
    text = json.dumps({"idPrefix": "[" * 5000}).encode()
    assert operator.post("/executions/search", raw=text).status == 200


def test_deep_signal_values_are_refused_and_not_delivered(operator: ApiClient) -> None:
    eid = new_id("deep")
    assert operator.post("/workflows/holdable/executions", {"executionId": eid}).status == 200
    operator.until_waiting(eid, "go")

    refused(operator.post(f"/executions/{eid}/signal/go", raw=nested(100_000)), 400, "nesting_too_deep")
    refused(operator.post(f"/executions/{eid}/signal/go", raw=b"[" * 3000), 400, "nesting_too_deep")
    start = {"executionId": new_id("deep"), "inputs": {"go": json.loads(nested(MAX_JSON_DEPTH))}}
    refused(operator.post("/workflows/holdable/executions", start), 400, "nesting_too_deep")

    assert operator.get(f"/executions/{eid}/inputs").body == [
        {"name": "go", "tag": "bool", "delivered": False, "jsonSchema": {"type": "boolean"}}
    ]
    refused(operator.get(f"/executions/{start['executionId']}"), 404, "execution_not_found")


def test_nesting_at_the_limit_passes_the_guard(operator: ApiClient) -> None:
    """64 levels reach the route, which judges the value (here: not a boolean)."""
    eid = new_id("limit")
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    operator.until_waiting(eid, "go")
    refused(operator.post(f"/executions/{eid}/signal/go", raw=nested(MAX_JSON_DEPTH)), 400, "invalid_input")


# -------------------------------------------------------------------------------------------- text


@pytest.mark.parametrize(
    "search", [{"workflowId": "\udfff"}, {"idPrefix": "a\ud800"}, {"status": "waiting:\udfff"}]
)
def test_lone_surrogates_in_a_search_are_400(operator: ApiClient, search: dict[str, str]) -> None:
    refused(operator.post("/executions/search", search), 400, "lone_surrogate")


def test_lone_surrogates_record_nothing(operator: ApiClient) -> None:
    eid = new_id("surrogate")
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    operator.until_waiting(eid, "go")

    refused(operator.post(f"/executions/{eid}/cancel", {"reason": "stop\udfff"}), 400, "lone_surrogate")
    refused(
        operator.post("/executions/cancel", {"workflowId": "holdable", "reason": "\udfff"}),
        400,
        "lone_surrogate",
    )
    refused(operator.post("/workflows/greet/executions", {"executionId": "\udfff"}), 400, "lone_surrogate")
    refused(
        operator.post("/workflows/greet/executions", {"inputs": {"name": "\udc00"}}), 400, "lone_surrogate"
    )

    detail = operator.get(f"/executions/{eid}").body
    assert (detail["status"], detail["cancelRequested"], detail["cancelReason"]) == ("running", False, "")
    # A pair is a character like any other.
    assert operator.post("/executions/search", {"idPrefix": "\U0001f600"}).body == {"items": [], "total": 0}


def test_nul_characters_are_400_without_a_caller(anonymous: ApiClient) -> None:
    refused(anonymous.post("/executions/search", {"idPrefix": "\x00"}), 400, "nul_character")
    refused(anonymous.get("/executions/a%00b"), 400, "nul_character")


# ----------------------------------------------------------------------------------------- numbers


def test_paging_numbers_are_json_schema_integers(operator: ApiClient) -> None:
    """`2.0` is an integer (JSON Schema says so, and the document says `integer`); `2.5` and `"2"` are not."""
    assert operator.post("/executions/search", {"limit": 2.0, "offset": 0.0}).status == 200
    assert operator.get("/executions/x/history", query="limit=2&offset=0").status == 200
    refused(operator.post("/executions/search", {"limit": 2.5}), 400, "invalid_request")
    refused(operator.post("/executions/search", {"offset": 99999999999999999999}), 400, "invalid_request")
    refused(operator.post("/executions/search", {"offset": 1e300}), 400, "invalid_request")
    refused(
        operator.get("/executions/x/history", query="offset=99999999999999999999"), 400, "invalid_request"
    )


# --------------------------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("execution_id", "problem"),
    [
        ("line\nbreak", "must not contain the control character U+000A (at position 4)"),
        ("a/b", "must not contain '/' (at position 1)"),
        ("..", "must not be '.' or '..'"),
        ("x" * 201, "must be at most 200 characters (got 201)"),
        ("bell\x07", "must not contain the control character U+0007 (at position 4)"),
    ],
)
def test_a_start_with_an_id_breaking_the_rule_is_400(
    operator: ApiClient, execution_id: str, problem: str
) -> None:
    body = refused(
        operator.post("/workflows/greet/executions", {"executionId": execution_id}), 400, "invalid_id"
    )
    assert body["detail"] == {"what": "execution id", "problem": problem}
    listed = operator.post("/executions/search", {"workflowId": "greet", "idPrefix": execution_id[:4]}).body
    assert [i for i in listed["items"] if i["executionId"] == execution_id] == []


def test_ids_no_row_can_have_are_400_on_every_lookup(operator: ApiClient) -> None:
    long = "x" * 256
    for method, path in [
        ("GET", f"/executions/{long}"),
        ("GET", f"/executions/{long}/history"),
        ("GET", f"/executions/{long}/inputs"),
        ("GET", f"/executions/{long}/diagram"),
        ("POST", f"/executions/{long}/signal/go"),
        ("POST", f"/executions/{long}/cancel"),
        ("POST", f"/executions/{long}/resume"),
        ("POST", f"/executions/{long}/end"),
    ]:
        body = refused(
            operator.request(method, path, raw=b'{"reason": "r"}' if "end" in path else b"{}"),
            400,
            "invalid_id",
        )
        assert body["detail"] == {
            "what": "execution id",
            "problem": "must be at most 255 characters (got 256)",
        }
    body = refused(operator.get(f"/workflows/{long}"), 400, "invalid_id")
    assert body["detail"]["what"] == "workflow id"


def test_rows_made_before_the_id_rule_stay_readable(live: Live, operator: ApiClient) -> None:
    """A newline, or 230 characters, broke no rule when the row was made: its lookups still answer."""
    for eid in (new_id("legacy") + "\nrow", "old-" + "y" * 226):
        live.run("-m", "tests.api.make_parked", eid, "crashy")
        quoted = urllib.parse.quote(eid, safe="")
        assert operator.get(f"/executions/{quoted}").body["executionId"] == eid
        assert operator.get(f"/executions/{quoted}/history").status == 200
        assert operator.post(f"/executions/{quoted}/cancel", {"reason": "tidy"}).status == 202


# ------------------------------------------------------------------------------------- no such route


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/executions/x/nope", "/api/v2/workflows", "/api/x"])
def test_unmatched_api_paths_are_the_json_404(live: Live, path: str) -> None:
    for token in (live.credentials["operator_token"], None):
        reply = send(live, "GET", path, token=token)
        assert reply.headers["Content-Type"] == "application/json"
        refused(reply, 404, "route_not_found")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/v1/workflows/greet/executions", "POST"),
        ("PUT", "/api/v1/executions/search", "POST"),
        ("OPTIONS", "/api/v1/executions/search", "POST"),
        ("OPTIONS", "/api/v1/executions/cancel", "POST"),
        ("DELETE", "/api/v1/executions/x", "GET"),
        ("PATCH", "/api/v1/executions/x/cancel", "POST"),
        ("POST", "/api/v1/health", "GET"),
    ],
)
def test_wrong_methods_are_the_json_405_with_the_documented_allow(
    live: Live, method: str, path: str, allow: str
) -> None:
    reply = send(live, method, path, b"{}", token=live.credentials["operator_token"])
    body = refused(reply, 405, "method_not_allowed")
    assert (reply.headers["Allow"], body["detail"]) == (allow, {"allowed": [allow]})
