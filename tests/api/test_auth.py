"""Who may call: nobody anonymous (401), tokens and sessions (CSRF kept), operator verbs need the
`console.operate_executions` permission (403); starting and signalling, `console.run_executions` (see
test_permissions)."""

from __future__ import annotations

import uuid

import pytest

from tests.api.client import ApiClient, Live
from tests.api.test_errors import refused

ROUTES = [
    ("GET", "/workflows"),
    ("GET", "/workflows/greet"),
    ("GET", "/workflows/greet/diagram"),
    ("POST", "/workflows/greet/executions"),
    ("GET", "/workflows/greet/parked"),
    ("GET", "/executions/x"),
    ("GET", "/executions/x/inputs"),
    ("GET", "/executions/x/history"),
    ("GET", "/executions/x/diagram"),
    ("POST", "/executions/x/signal/name"),
    ("POST", "/executions/x/cancel"),
    ("POST", "/executions/cancel"),
    ("POST", "/executions/search"),
    ("POST", "/executions/x/resume"),
    ("POST", "/executions/x/answer/boom"),
    ("POST", "/executions/x/end"),
    ("GET", "/health"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_anonymous_is_401(anonymous: ApiClient, method: str, path: str) -> None:
    reply = anonymous.request(method, path, {} if method == "POST" else None)
    refused(reply, 401, "unauthenticated")
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")


def test_unknown_token_is_401(live: Live) -> None:
    refused(ApiClient(live.base, token="fd_not-a-token").get("/workflows"), 401, "unauthenticated")


def test_session_without_csrf_reads_but_may_not_post(live: Live) -> None:
    session = ApiClient(live.base, session=live.credentials["operator_session"], csrf=False)
    assert session.get("/workflows/greet").status == 200
    refused(session.post("/workflows/greet/executions", {}), 403, "csrf_failed")


def test_session_with_csrf_starts_and_cancels(live: Live) -> None:
    session = ApiClient(live.base, session=live.credentials["operator_session"])
    eid = f"session-{uuid.uuid4().hex[:10]}"
    assert session.post("/workflows/holdable/executions", {"executionId": eid}).status == 200
    assert session.post(f"/executions/{eid}/cancel", {"reason": "by session"}).status == 202


@pytest.mark.parametrize("cookie", ["nosuchsession0000", "no-such-session", '"abcdefghij\\000klmnop"'])
def test_unknown_session_is_401(live: Live, cookie: str) -> None:
    """A session cookie naming no session, or one that could not be stored at all (a NUL), is nobody."""
    refused(ApiClient(live.base, session=cookie).get("/workflows"), 401, "unauthenticated")
    refused(
        ApiClient(live.base, session=cookie, csrf=False).post("/executions/search", {}),
        401,
        "unauthenticated",
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/executions/{eid}/cancel", {}),
        ("/executions/cancel", {"workflowId": "holdable"}),
        ("/executions/{eid}/resume", {"go": True}),
        ("/executions/{eid}/answer/go", {"value": True}),
        ("/executions/{eid}/end", {"reason": "no"}),
    ],
)
def test_operator_verbs_need_the_permission(
    runner: ApiClient, viewer: ApiClient, path: str, body: dict[str, object]
) -> None:
    """Neither a viewer nor a runner (who may start and signal) may use an operator verb."""
    eid = f"runner-{uuid.uuid4().hex[:10]}"
    assert runner.post("/workflows/holdable/executions", {"executionId": eid}).status == 200
    for caller in (viewer, runner):
        body_of = refused(caller.post(path.format(eid=eid), body), 403, "permission_denied")
        assert "flowdeck_console.operate_executions" in body_of["error"]
    assert viewer.get(f"/executions/{eid}").body["cancelRequested"] is False


def test_runners_start_and_signal(runner: ApiClient, live: Live) -> None:
    session = ApiClient(live.base, session=live.credentials["runner_session"])
    eid = f"runner-{uuid.uuid4().hex[:10]}"
    assert runner.post("/workflows/greet/executions", {"executionId": eid}).status == 200
    runner.until_waiting(eid, "name")
    assert session.post(f"/executions/{eid}/signal/name", raw=b'"vi"').status == 200
    assert runner.until_status(eid, "completed")["status"] == "completed"
    refused(session.post(f"/executions/{eid}/cancel", {}), 403, "permission_denied")
