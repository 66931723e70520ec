"""resume (dry run, go), answer and end over HTTP, on executions stopped for a person (F0001)."""

from __future__ import annotations

import uuid

from tests.api.client import ApiClient
from tests.api.test_errors import refused


def stopped(client: ApiClient) -> str:
    eid = f"crashy-{uuid.uuid4().hex[:10]}"
    client.post("/workflows/crashy/executions", {"executionId": eid})
    client.until_status(eid, "stopped:F0001")
    return eid


def test_a_stopped_execution_says_why(operator: ApiClient) -> None:
    eid = stopped(operator)
    detail = operator.get(f"/executions/{eid}").body
    stop = detail["stop"]
    assert (detail["status"], stop["code"], stop["node"]) == ("stopped:F0001", "F0001", "boom")
    assert "the program has a mistake" in stop["reason"]
    assert [(n["name"], n["status"]) for n in detail["progress"]] == [
        ("boom", "stopped"),
        ("after", "pending"),
    ]
    found = operator.post("/executions/search", {"status": "stopped:F0001", "idPrefix": eid}).body
    assert [i["executionId"] for i in found["items"]] == [eid]
    assert operator.post("/executions/search", {"status": "stopped", "idPrefix": eid}).body["total"] == 1


def test_resume_dry_run_then_answer_then_go(operator: ApiClient, viewer: ApiClient) -> None:
    eid = stopped(operator)

    dry = operator.post(f"/executions/{eid}/resume")
    # on the very version it stopped under, its F0001 unanswered: the same mistake would stop it again
    body = dict(dry.body)
    warning = body.pop("warning")
    assert (dry.status, body) == (
        200,
        {"kept": [], "nextNode": "boom", "conflicts": [], "resumed": False},
    )
    assert "the same mistake will stop it again: F0001 at boom" in warning
    assert viewer.post(f"/executions/{eid}/resume", {"go": False}).body == dry.body

    assert operator.post(f"/executions/{eid}/answer/boom", {}).body == {"ok": True}
    refused(operator.post(f"/executions/{eid}/answer/boom", {}), 409, "already_answered")
    shown = operator.get(f"/executions/{eid}").body
    assert (shown["state"], shown["stateText"], shown["stop"]["answered"]) == (
        "stopped",
        "stopped·answered:F0001",
        True,
    )
    answered = operator.post(f"/executions/{eid}/resume", {}).body
    assert (answered["kept"], answered["warning"]) == (["boom"], "")

    went = operator.post(f"/executions/{eid}/resume", {"go": True})
    assert (went.status, went.body["resumed"]) == (200, True)
    assert operator.until_status(eid, "completed")["status"] == "completed"
    kinds = [e["kind"] for e in operator.get(f"/executions/{eid}/history", query="limit=-1").body["events"]]
    assert {"Stopped", "Answered", "Resumed", "Completed"} <= set(kinds)


def test_answer_refusals(operator: ApiClient) -> None:
    eid = stopped(operator)
    body = refused(operator.post(f"/executions/{eid}/answer/nowhere", {}), 404, "node_not_found")
    assert body["detail"]["node"] == "nowhere"
    refused(operator.post(f"/executions/{eid}/answer/boom", {"value": 42}), 400, "invalid_input")

    running = f"holdable-{uuid.uuid4().hex[:10]}"
    operator.post("/workflows/holdable/executions", {"executionId": running})
    operator.until_waiting(running, "go")
    refused(operator.post(f"/executions/{running}/answer/went", {"value": True}), 409, "not_stopped")


def test_end(operator: ApiClient) -> None:
    eid = stopped(operator)

    assert operator.post(f"/executions/{eid}/end", {"reason": "refunded by hand"}).body == {"ok": True}

    assert operator.get(f"/executions/{eid}").body["status"] == "failed:refunded by hand"
    refused(operator.post(f"/executions/{eid}/end", {"reason": "again"}), 409, "execution_terminal")
    refused(operator.post(f"/executions/{eid}/end", {}), 400, "invalid_request")
    refused(operator.post(f"/executions/{eid}/end", {"reason": ""}), 400, "invalid_request")
    ended = [e for e in operator.get(f"/executions/{eid}/history").body["events"] if e["kind"] == "Ended"]
    assert [(e["detail"], e["data"]["actor"]) for e in ended] == [("refunded by hand", "olga")]


def test_end_a_waiting_execution(operator: ApiClient) -> None:
    """End needs no stop: a person may close any unended execution that no worker holds."""
    eid = f"holdable-{uuid.uuid4().hex[:10]}"
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    operator.until_waiting(eid, "go")

    assert operator.post(f"/executions/{eid}/end", {"reason": "closed by hand"}).status == 200

    assert operator.get(f"/executions/{eid}").body["status"] == "failed:closed by hand"
    body = refused(operator.post(f"/executions/{eid}/resume", {"go": True}), 409, "execution_terminal")
    assert body["detail"] == {"execution_id": eid, "status": "failed:closed by hand"}
