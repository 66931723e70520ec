"""A read-only user (logged in, no permission) reads everything and changes nothing: starting and
signalling need `flowdeck_console.run_executions`, which the operator permission does not imply."""

from __future__ import annotations

import pytest

from tests.api.client import ApiClient, Live
from tests.api.test_errors import new_id, refused


@pytest.fixture(params=["token", "session"])
def read_only(request: pytest.FixtureRequest, live: Live) -> ApiClient:
    """The viewer, by bearer token and by session (with its CSRF pair)."""
    if request.param == "token":
        return ApiClient(live.base, token=live.credentials["viewer_token"])
    return ApiClient(live.base, session=live.credentials["viewer_session"])


def test_a_read_only_user_may_not_start(read_only: ApiClient, operator: ApiClient) -> None:
    eid = new_id("read-only")
    body = refused(
        read_only.post("/workflows/greet/executions", {"executionId": eid}), 403, "permission_denied"
    )
    assert body == {
        "error": "this needs the 'flowdeck_console.run_executions' permission",
        "code": "permission_denied",
        "detail": None,
    }
    refused(
        read_only.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"name": "x"}}),
        403,
        "permission_denied",
    )
    refused(operator.get(f"/executions/{eid}"), 404, "execution_not_found")
    assert operator.post("/executions/search", {"idPrefix": eid}).body["total"] == 0


def test_a_read_only_user_may_not_signal(read_only: ApiClient, operator: ApiClient) -> None:
    eid = new_id("read-only")
    assert operator.post("/workflows/greet/executions", {"executionId": eid}).status == 200
    operator.until_waiting(eid, "name")
    before = operator.get(f"/executions/{eid}/history", query="limit=-1").body["events"]

    refused(read_only.post(f"/executions/{eid}/signal/name", raw=b'"sneaky"'), 403, "permission_denied")
    refused(read_only.post(f"/executions/{eid}/signal/name", raw=b"{not json"), 403, "permission_denied")

    assert operator.get(f"/executions/{eid}/history", query="limit=-1").body["events"] == before
    assert [(i["name"], i["delivered"]) for i in operator.get(f"/executions/{eid}/inputs").body] == [
        ("name", False)
    ]
    assert operator.post(f"/executions/{eid}/signal/name", raw=b'"ok"').status == 200
    assert operator.until_status(eid, "completed")["status"] == "completed"


def test_a_read_only_user_reads_everything(read_only: ApiClient, operator: ApiClient) -> None:
    eid = new_id("read-only")
    assert operator.post("/workflows/greet/executions", {"executionId": eid}).status == 200
    operator.until_waiting(eid, "name")
    reads = [
        ("GET", "/workflows", None),
        ("GET", "/workflows/greet", None),
        ("GET", "/workflows/greet/diagram", None),
        ("GET", "/workflows/greet/parked", None),
        ("GET", f"/executions/{eid}", None),
        ("GET", f"/executions/{eid}/inputs", None),
        ("GET", f"/executions/{eid}/history", None),
        ("GET", f"/executions/{eid}/diagram", None),
        ("GET", "/health", None),
        ("POST", "/executions/search", {"idPrefix": eid}),
        ("POST", f"/executions/{eid}/resume", {"go": False}),  # the dry run only reads
    ]
    answered = {(m, p): read_only.request(m, p, body).status for m, p, body in reads}
    expected = {(m, p): 200 for m, p, _ in reads}
    # a waiting execution has nothing to resume: the reader's dry run is let through to that answer (409
    # not_resumable), not refused as a permission (403)
    expected["POST", f"/executions/{eid}/resume"] = 409
    assert answered == expected
    assert read_only.post("/executions/search", {"idPrefix": eid}).body["total"] == 1


def test_the_operator_permission_does_not_imply_running(live: Live) -> None:
    """Two separate powers: an operator without `run_executions` may cancel but not start or signal."""
    operate_only = ApiClient(live.base, token=live.credentials["operate_only_token"])
    runner = ApiClient(live.base, token=live.credentials["runner_token"])
    refused(operate_only.post("/workflows/holdable/executions", {}), 403, "permission_denied")
    eid = new_id("operate-only")
    assert runner.post("/workflows/holdable/executions", {"executionId": eid}).status == 200
    refused(operate_only.post(f"/executions/{eid}/signal/go", raw=b"true"), 403, "permission_denied")
    assert operate_only.post(f"/executions/{eid}/cancel", {"reason": "by an operator"}).status == 202
