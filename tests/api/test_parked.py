"""An execution started under a version this server does not serve: parked, described without inputs or
progress, refused where the definition is needed (404), and moved to the newest version by resume."""

from __future__ import annotations

import uuid

from tests.api.client import ApiClient, Live
from tests.api.test_errors import refused


def test_parked_execution(live: Live, operator: ApiClient) -> None:
    eid = f"parked-{uuid.uuid4().hex[:10]}"
    live.run("-m", "tests.api.make_parked", eid)

    parked = operator.get("/workflows/holdable/parked").body
    assert [p["executionId"] for p in parked if p["executionId"] == eid] == [eid]
    detail = operator.get(f"/executions/{eid}").body
    assert (detail["status"], detail["hash"], detail["inputs"], detail["progress"]) == (
        "running",
        "0ld0ld0ld0ld0ld0",
        [],
        [],
    )
    refused(operator.get(f"/executions/{eid}/inputs"), 404, "workflow_not_registered")
    refused(operator.get(f"/executions/{eid}/diagram"), 404, "workflow_not_registered")
    refused(operator.post(f"/executions/{eid}/signal/go", raw=b"true"), 404, "workflow_not_registered")

    dry = operator.post(f"/executions/{eid}/resume").body
    assert dry == {"kept": [], "nextNode": "go", "conflicts": [], "resumed": False, "warning": ""}
    assert operator.post(f"/executions/{eid}/resume", {"go": True}).body["resumed"] is True

    operator.until_waiting(eid, "go")
    assert eid not in [p["executionId"] for p in operator.get("/workflows/holdable/parked").body]
    assert operator.post(f"/executions/{eid}/signal/go", raw=b"true").status == 200
    assert operator.until_status(eid, "completed")["status"] == "completed"
