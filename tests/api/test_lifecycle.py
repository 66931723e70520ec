"""Executions over HTTP against the live server: start → signal → completed, inputs, history, diagrams."""

from __future__ import annotations

import uuid

from tests.api.client import ApiClient


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_start_signal_completed(operator: ApiClient) -> None:
    eid = new_id("greet")
    assert operator.post("/workflows/greet/executions", {"executionId": eid}).body == {"executionId": eid}
    operator.until_waiting(eid, "name")

    signalled = operator.post(f"/executions/{eid}/signal/name", raw=b'"ada"')

    assert (signalled.status, signalled.body) == (200, {"ok": True})
    detail = operator.until_status(eid, "completed")
    assert detail["waits"] == []
    assert detail["inputs"] == [
        {"name": "name", "tag": "str", "delivered": True, "jsonSchema": {"type": "string"}}
    ]
    assert [(n["name"], n["nodeType"], n["status"]) for n in detail["progress"]] == [
        ("name", "Input", "completed"),
        ("greeting", "Output", "completed"),
    ]


def test_two_signals_then_completed(operator: ApiClient) -> None:
    """The reference's lifecycle: create, signal one input, signal the other, completed."""
    eid = operator.post("/workflows/approval/executions").body["executionId"]
    operator.until_waiting(eid, "order")
    assert operator.post(f"/executions/{eid}/signal/order", {"id": "o-1", "quantity": 2}).status == 200
    operator.until_waiting(eid, "approved")
    assert operator.post(f"/executions/{eid}/signal/approved", raw=b"true").status == 200
    assert operator.until_status(eid, "completed")["status"] == "completed"


def test_start_with_inputs_seeds_them(operator: ApiClient) -> None:
    eid = new_id("seeded")
    started = operator.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"name": "bo"}})

    assert (started.status, started.body) == (200, {"executionId": eid})
    assert operator.until_status(eid, "completed")["inputs"][0]["delivered"] is True


def test_random_id_when_none_given(operator: ApiClient) -> None:
    first = operator.post("/workflows/holdable/executions", {}).body["executionId"]
    second = operator.post("/workflows/holdable/executions").body["executionId"]
    assert first != second
    assert operator.get(f"/executions/{first}").body["flowId"] == "holdable"


def test_describe_waiting_execution(operator: ApiClient) -> None:
    eid = new_id("described")
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    detail = operator.until_waiting(eid, "go")

    assert {k: v for k, v in detail.items() if k not in ("created", "updated", "hash", "progress")} == {
        "executionId": eid,
        "flowId": "holdable",
        "status": "running",
        "state": "waiting",
        "stateText": "running·waiting",
        "waits": [{"path": "go", "kind": "waiting", "limit": None, "detail": "go"}],
        "cancelRequested": False,
        "cancelReason": "",
        "priority": 0,
        "concurrency": None,
        "queue": None,
        "stop": None,
        "inputs": [{"name": "go", "tag": "bool", "delivered": False, "jsonSchema": {"type": "boolean"}}],
    }
    assert [(n["name"], n["status"]) for n in detail["progress"]] == [("go", "waiting"), ("went", "pending")]
    assert operator.get(f"/executions/{eid}/inputs").body == detail["inputs"]


def test_history_pages(operator: ApiClient) -> None:
    eid = new_id("history")
    operator.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"name": "cy"}})
    operator.until_status(eid, "completed")

    everything = operator.get(f"/executions/{eid}/history", query="limit=-1").body
    kinds = [e["kind"] for e in everything["events"]]
    assert kinds[0] == "Created"
    assert kinds[-1] == "Completed"
    assert everything["hasMore"] is False
    assert [e["seq"] for e in everything["events"]] == list(range(1, len(kinds) + 1))

    first = operator.get(f"/executions/{eid}/history", query="limit=1").body
    assert (first["events"], first["hasMore"]) == (everything["events"][:1], True)
    rest = operator.get(f"/executions/{eid}/history", query="limit=50&offset=1").body
    assert (rest["events"], rest["hasMore"]) == (everything["events"][1:], False)


def test_history_of_unknown_execution_is_empty(operator: ApiClient) -> None:
    reply = operator.get("/executions/never-was/history")
    assert (reply.status, reply.body) == (200, {"events": [], "hasMore": False})


def test_diagrams(operator: ApiClient) -> None:
    mermaid = operator.get("/workflows/greet/diagram")
    assert mermaid.status == 200
    assert mermaid.text.startswith(("graph", "flowchart"))
    assert operator.get("/workflows/greet/diagram", query="format=DOT").text.startswith("digraph")
    assert operator.get("/workflows/greet/diagram", query="format=nonsense").text == mermaid.text

    eid = new_id("drawn")
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    operator.until_waiting(eid, "go")
    painted = operator.get(f"/executions/{eid}/diagram")
    assert painted.status == 200
    assert painted.text.startswith(("graph", "flowchart"))
    assert operator.get(f"/executions/{eid}/diagram", query="format=dot").text.startswith("digraph")


def test_workflows_list_and_describe(operator: ApiClient) -> None:
    listed = {w["id"]: w for w in operator.get("/workflows").body}
    greet = operator.get("/workflows/greet").body

    assert listed["greet"] == greet
    assert {k: v for k, v in greet.items() if k not in ("nodes", "structuralHash")} == {
        "id": "greet",
        "meta": {
            "description": "",
            "tags": [],
            "timeout": None,
            "retry": None,
            "version": "",
            "concurrency": None,
        },
        "inputs": [{"name": "name", "tag": "str", "jsonSchema": {"type": "string"}}],
        "outputs": ["greeting"],
    }
    assert [(n["name"], n["nodeType"], n["tag"]) for n in greet["nodes"]] == [
        ("name", "input", "str"),
        ("greeting", "output", "json"),
    ]


def test_parked_is_empty_when_every_version_is_served(operator: ApiClient) -> None:
    operator.post("/workflows/holdable/executions")
    reply = operator.get("/workflows/holdable/parked")
    assert (reply.status, reply.body) == (200, [])


def test_health(operator: ApiClient) -> None:
    reply = operator.get("/health")
    body = reply.body
    assert reply.status == 200
    assert (body["healthy"], body["storeOk"], body["storeError"]) == (True, True, None)
    assert {"greet", "approval", "holdable", "parking", "crashy"} <= set(body["workflows"])
    # the workers process publishes its heartbeat: two workers, both alive
    workers = next(e for e in body["executors"] if e["state"] == "healthy")
    assert (workers["workersAlive"], workers["workersConfigured"], workers["pollFailures"]) == (2, 2, 0)
    assert set(workers) == {
        "executorId",
        "host",
        "pid",
        "state",
        "started",
        "updated",
        "ageSeconds",
        "workersAlive",
        "workersConfigured",
        "pollFailures",
        "lastPollFailure",
        "lastPollFailureAt",
        "storeFailures",
        "claimsHeld",
    }


def test_search(operator: ApiClient) -> None:
    prefix = new_id("search")
    for n in range(3):
        operator.post("/workflows/holdable/executions", {"executionId": f"{prefix}-{n}"})
    for n in range(3):
        operator.until_waiting(f"{prefix}-{n}", "go")

    reply = operator.post("/executions/search", {"idPrefix": prefix, "status": "waiting:go"})
    assert reply.status == 200, reply.text
    found = reply.body
    assert found["total"] == 3
    assert [i["executionId"] for i in found["items"]] == [f"{prefix}-2", f"{prefix}-1", f"{prefix}-0"]
    assert found["items"][0] == {
        "executionId": f"{prefix}-2",
        "flowId": "holdable",
        "status": "running",
        "state": "waiting",
        "stateText": "running·waiting",
        "waits": [{"path": "go", "kind": "waiting", "limit": None, "detail": "go"}],
        "cancelRequested": False,
        "created": found["items"][0]["created"],
        "updated": found["items"][0]["updated"],
        "priority": 0,
        "concurrency": None,
        "queue": None,  # set on a queued execution: its limit's line and its place in it
    }
    page = operator.post("/executions/search", {"idPrefix": prefix, "limit": 1, "offset": 1}).body
    assert (page["total"], [i["executionId"] for i in page["items"]]) == (3, [f"{prefix}-1"])
    assert operator.post("/executions/search", {"idPrefix": prefix, "status": "completed"}).body == {
        "items": [],
        "total": 0,
    }
    by_workflow = operator.post("/executions/search", {"workflowId": "holdable", "idPrefix": prefix}).body
    assert by_workflow["total"] == 3


def test_search_by_a_recorded_value(operator: ApiClient) -> None:
    """`where` terms match a seeded input and one delivered by signal alike, with the other narrowings."""
    prefix = new_id("valued")
    for n, quantity in ((0, 2), (1, 5)):
        seeded = {"executionId": f"{prefix}-{n}", "inputs": {"order": {"id": f"o-{n}", "quantity": quantity}}}
        assert operator.post("/workflows/approval/executions", seeded).status == 200
    operator.post("/workflows/approval/executions", {"executionId": f"{prefix}-2"})
    operator.until_waiting(f"{prefix}-2", "order")
    assert operator.post(f"/executions/{prefix}-2/signal/order", {"id": "o-2", "quantity": 5}).status == 200
    operator.until_waiting(f"{prefix}-2", "approved")

    def found(*where: str, **narrow: object) -> tuple[list[str], int]:
        reply = operator.post("/executions/search", {"idPrefix": prefix, "where": list(where), **narrow})
        assert reply.status == 200, reply.text
        return [i["executionId"] for i in reply.body["items"]], reply.body["total"]

    assert found("field:order.quantity=5") == ([f"{prefix}-2", f"{prefix}-1"], 2)
    assert found('field:order.quantity="5"') == ([], 0)
    assert found("field:order.quantity=5", "field:order.id=o-2") == ([f"{prefix}-2"], 1)
    assert found("field:order.quantity=5", limit=1, offset=1) == ([f"{prefix}-1"], 2)
    assert found("field:order.id=o-0", status="waiting:approved") == ([f"{prefix}-0"], 1)
    assert found("field:order.id=o-0", status="completed") == ([], 0)
    # issue 29: text ignoring case, by prefix and by part; numbers by range
    assert found("field:order.id=O-2") == ([f"{prefix}-2"], 1)
    assert found("field:order.id^=O-") == ([f"{prefix}-2", f"{prefix}-1", f"{prefix}-0"], 3)
    assert found("field:order.id~=-1") == ([f"{prefix}-1"], 1)
    assert found("field:order.quantity>2") == ([f"{prefix}-2", f"{prefix}-1"], 2)
    assert found("field:order.quantity<=2", workflowId="approval") == ([f"{prefix}-0"], 1)


def test_a_start_keeps_its_priority(operator: ApiClient) -> None:
    """`priority` is the execution's (the claim's order: flowdeck.store.claim_order); absent, the workflow's
    default, 0."""
    urgent, plain = new_id("urgent"), new_id("plain")
    started = operator.post("/workflows/holdable/executions", {"executionId": urgent, "priority": 80})
    assert (started.status, started.body) == (200, {"executionId": urgent})
    operator.post("/workflows/holdable/executions", {"executionId": plain})
    assert operator.get(f"/executions/{urgent}").body["priority"] == 80
    assert operator.get(f"/executions/{plain}").body["priority"] == 0
