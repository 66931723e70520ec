"""A client generated from the live server's document by openapi-python-client drives the API.

Every operation must be generated (the tool skips one whose schemas clash, and says so), the calls are
named by their operation ids (`start_approval`, `signal_execution`, ...), and start, signal, search and
cancel work through the generated, typed calls against the live server.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.api.client import Live

PACKAGE = "flowdeck_generated_client"


@pytest.fixture(scope="module")
def generated(live: Live, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generate the client once; answer the folder holding its package."""
    folder = tmp_path_factory.mktemp("client")
    request = urllib.request.Request(
        f"{live.base}/api/openapi.json",
        headers={"Authorization": f"Bearer {live.credentials['operator_token']}"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        (folder / "openapi.json").write_bytes(reply.read())
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}  # it runs `ruff`
    command = [bin_dir / "openapi-python-client", "generate", "--path", "openapi.json", "--meta", "none"]
    done = subprocess.run(
        [*command, "--output-path", PACKAGE],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "Warning" not in done.stdout, done.stdout  # e.g. "Endpoint will not be generated"
    return folder


@pytest.fixture(scope="module")
def client_modules(generated: Path) -> Any:
    sys.path.insert(0, str(generated))
    try:
        yield lambda name: importlib.import_module(f"{PACKAGE}.{name}")
    finally:
        sys.path.remove(str(generated))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_every_operation_is_generated_under_its_verb(generated: Path) -> None:
    api = generated / PACKAGE / "api"
    calls = {path.stem for path in api.glob("*/*.py") if path.stem != "__init__"}
    assert {
        "list_workflows",
        "describe_workflow",
        "draw_workflow",
        "start_execution",
        "list_parked_executions",
        "search_executions",
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
        "start_approval",
        "start_greet",
        "start_holdable",
        "start_fulfilment",
        "start_follow_up",
    } <= calls
    assert not [call for call in calls if call.startswith("console_")]


def until(describe: ModuleType, client: Any, execution_id: str, wanted: str) -> Any:
    """Poll the generated `describe_execution` until the status starts with `wanted` (the workers run in
    another process, on real time)."""
    deadline = time.monotonic() + 30
    seen = None
    while time.monotonic() < deadline:
        seen = describe.sync(execution_id, client=client)
        if getattr(seen, "status", "").startswith(wanted):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{execution_id} never reached {wanted!r}; last seen: {seen}")


def test_the_generated_client_starts_signals_searches_and_cancels(live: Live, client_modules: Any) -> None:
    authenticated = client_modules("client").AuthenticatedClient(
        base_url=live.base, token=live.credentials["operator_token"], raise_on_unexpected_status=True
    )
    with authenticated as client:  # closes its connections (httpx)
        drive(client_modules, client)


def drive(client_modules: Any, client: Any) -> None:
    models = client_modules("models")
    start_approval = client_modules("api.workflows.start_approval")
    start_holdable = client_modules("api.workflows.start_holdable")
    signal = client_modules("api.executions.signal_execution")
    search = client_modules("api.executions.search_executions")
    cancel = client_modules("api.executions.cancel_execution")
    describe = client_modules("api.executions.describe_execution")

    eid = f"generated-{uuid.uuid4().hex[:10]}"
    order = models.StartApprovalInputsOfApprovalApprovalOrder(id="o-7", quantity=2)
    body = models.StartApproval(execution_id=eid, inputs=models.StartApprovalInputsOfApproval(order=order))
    assert start_approval.sync(client=client, body=body) == models.StartResponse(execution_id=eid)

    assert until(describe, client, eid, "running").inputs[1].delivered is False
    assert signal.sync(eid, "approved", client=client, body=True) == models.OkResponse(ok=True)
    assert until(describe, client, eid, "completed").flow_id == "approval"

    found = search.sync(client=client, body=models.SearchRequest(id_prefix=eid, status="completed"))
    assert (found.total, [i.execution_id for i in found.items]) == (1, [eid])

    held = f"generated-held-{uuid.uuid4().hex[:10]}"
    start_holdable.sync(client=client, body=models.StartHoldable(execution_id=held))
    answer = cancel.sync(held, client=client, body=models.CancelRequest(reason="not needed"))
    assert answer.outcome == models.CancelResponseOutcome.ACCEPTED
    cancelled = until(describe, client, held, "cancelled")
    assert (cancelled.cancel_requested, cancelled.cancel_reason) == (True, "not needed")

    refused = signal.sync("never-was", "go", client=client, body=True)
    assert (type(refused).__name__, refused.code) == ("ErrorResponse", "execution_not_found")
