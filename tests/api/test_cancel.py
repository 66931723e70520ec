"""Cancel and cancel-all over HTTP: 202 accepted, 200 already-requested, 200 already-terminal, 404 for an
id that names no execution."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from tests.api.client import ApiClient


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_cancel_outcomes(operator: ApiClient, tmp_path: Path) -> None:
    """The step holds the worker until the gate opens, so the request stays outstanding meanwhile."""
    eid = new_id("cancel")
    gate = tmp_path / "gate"
    operator.post("/workflows/gated/executions", {"executionId": eid, "inputs": {"gate": str(gate)}})
    until_started(gate)

    first = operator.post(f"/executions/{eid}/cancel", {"reason": "customer changed their mind"})
    assert (first.status, first.body) == (202, {"outcome": "accepted", "status": None})
    again = operator.post(f"/executions/{eid}/cancel", {"reason": "said twice"})
    assert (again.status, again.body) == (200, {"outcome": "already-requested", "status": None})
    assert operator.get(f"/executions/{eid}").body["cancelRequested"] is True

    gate.touch()
    ended = operator.until_status(eid, "cancelled")
    assert ended["cancelReason"] == "customer changed their mind"
    after = operator.post(f"/executions/{eid}/cancel", {})
    assert (after.status, after.body) == (200, {"outcome": "already-terminal", "status": "cancelled"})
    history = operator.get(f"/executions/{eid}/history", query="limit=-1").body["events"]
    requested = [(e["detail"], e["data"].get("actor")) for e in history if e["kind"] == "CancelRequested"]
    assert requested == [("customer changed their mind", "olga")]


def until_started(gate: Path, timeout: float = 30.0) -> None:
    """Wait for the gated step's body to say it runs (it touches `<gate>.started`)."""
    started = Path(f"{gate}.started")
    deadline = time.monotonic() + timeout
    while not started.exists():
        assert time.monotonic() < deadline, "the gated step never started"
        time.sleep(0.02)


def test_cancel_a_waiting_execution(operator: ApiClient) -> None:
    eid = new_id("waiting")
    operator.post("/workflows/holdable/executions", {"executionId": eid})
    operator.until_waiting(eid, "go")

    reply = operator.post(f"/executions/{eid}/cancel", {"reason": "no longer needed"})

    assert (reply.status, reply.body) == (202, {"outcome": "accepted", "status": None})
    assert operator.until_status(eid, "cancelled")["cancelReason"] == "no longer needed"


def test_cancel_a_completed_execution(operator: ApiClient) -> None:
    eid = new_id("done")
    operator.post("/workflows/greet/executions", {"executionId": eid, "inputs": {"name": "ed"}})
    operator.until_status(eid, "completed")
    reply = operator.post(f"/executions/{eid}/cancel")
    assert (reply.status, reply.body) == (200, {"outcome": "already-terminal", "status": "completed"})


def test_cancel_an_id_that_never_existed(operator: ApiClient) -> None:
    reply = operator.post("/executions/never-existed/cancel")
    assert (reply.status, reply.body["code"]) == (404, "execution_not_found")


def test_cancel_all_counts_accepted_requests(operator: ApiClient) -> None:
    # The live server is the process's: a test before this one (schemathesis's stateful phase) may have
    # left `parking` executions parked. Their cancels asked for now are not counted again below.
    operator.post("/executions/cancel", {"workflowId": "parking"})
    ids = [new_id("parked") for _ in range(2)]
    for eid in ids:
        operator.post("/workflows/parking/executions", {"executionId": eid})
    for eid in ids:
        operator.until_waiting(eid, "go")

    reply = operator.post("/executions/cancel", {"workflowId": "parking", "reason": "closing time"})
    assert (reply.status, reply.body) == (200, {"requested": 2})
    assert operator.post("/executions/cancel", {"workflowId": "parking"}).body == {"requested": 0}
    for eid in ids:
        assert operator.until_status(eid, "cancelled")["cancelReason"] == "closing time"
