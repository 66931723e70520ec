"""A `django.tasks` task enqueued through Flowdeck's backend on every surface beside the flows, under its
module path, with its executions on SQLite and on PostgreSQL: found by its queue (`field:queue=emails`) on
the console's list, the REST API's and `flowdeck ls`; cancelled from the console (recorded with who did it,
read back FAILED); run, then its history and its node panel shown; counted in the metrics."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from flowdeck.console import client, discovery, django_tasks, live, metrics, runtime, task_flows
from flowdeck.console.models import Activity, create_token
from flowdeck.engine.engine import FlowEngine
from tests.console import task_funcs
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401
from tests.console.test_views import _user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

ADD = "tests.console.task_funcs.add"
Status = django_tasks.TaskResultStatus


@pytest.fixture
def tasks(backend: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Flowdeck's backend, any queue name allowed (QUEUES empty, as Django has it); the tasks' module
    discovered, as an app's `tasks` module is at start-up, so the CLI and the console know them."""
    settings.TASKS = {"default": {"BACKEND": "flowdeck.console.tasks.FlowdeckBackend", "QUEUES": []}}
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    discovery.discover([task_funcs.__name__])
    runtime.reset()
    live.reset()
    metrics.reset()
    yield backend
    metrics.reset()
    live.reset()
    runtime.reset()


def _headers() -> dict[str, str]:
    user = get_user_model().objects.filter(username="tasks-reader").first() or _user("tasks-reader", False)
    return {"Authorization": f"Bearer {create_token(user, 'tasks')}"}


def _run(execution_id: str) -> None:
    """Workers in this process, on the client's loop and the process's store (the console's), until the
    task's execution has ended."""

    async def drain() -> None:
        engine = FlowEngine(
            runtime.store(),
            (),
            workers=1,
            poll_timeout=timedelta(milliseconds=100),
            transient=runtime.TRANSIENT,
        )
        for path, versions in task_flows.flows_in(task_funcs.__name__).items():
            await engine.register(path, versions[-1])
        async with engine:
            with contextlib.suppress(client.FlowExecutionNotCompleted):
                await client.aresult(execution_id, timeout=20)

    client.blocking_read("run the task", drain)


def test_the_api_lists_a_task_under_its_module_path(tasks: str) -> None:
    result = task_funcs.add.enqueue(20, 22)
    listed = Client().get("/api/v1/executions", {"workflow": ADD}, headers=_headers())
    assert listed.status_code == 200, listed.content
    assert [(i["executionId"], i["flowId"]) for i in listed.json()["items"]] == [(result.id, ADD)]
    detail = Client().get(f"/api/v1/executions/{result.id}", headers=_headers())
    assert detail.status_code == 200, detail.content


def test_a_task_is_found_by_its_queue_on_the_console_the_api_and_the_cli(tasks: str) -> None:
    emailed = task_funcs.add.using(queue_name="emails").enqueue(1, 2)
    other = task_funcs.add.enqueue(3, 4)
    query = {"workflow": ADD, "q": "field:queue=emails"}
    api = Client().get("/api/v1/executions", query, headers=_headers())
    assert api.status_code == 200, api.content
    assert [i["executionId"] for i in api.json()["items"]] == [emailed.id]
    browser = Client()
    browser.force_login(_user("tasks-viewer", False))
    page = browser.get("/executions/", query)
    assert page.status_code == 200
    html = page.content.decode()
    assert (emailed.id in html, other.id in html) == (True, False)
    out = io.StringIO()
    call_command("flowdeck", "ls", "--json", "--workflow", ADD, "--where", "field:queue=emails", stdout=out)
    listed = json.loads(out.getvalue())
    items = listed["items"] if isinstance(listed, dict) else listed
    assert [item.get("executionId", item.get("execution_id")) for item in items] == [emailed.id]


def test_an_operator_cancels_a_task_from_the_console_and_it_reads_failed(tasks: str) -> None:
    result = task_funcs.add.enqueue(5, 6)
    operator = Client()
    operator.force_login(_user("tasks-operator", True))
    reply = operator.post(f"/executions/{result.id}/cancel/", {"reason": "sent by mistake"})
    assert reply.status_code == 200, reply.content
    _run(result.id)  # the cancel is carried out by a worker (no undos to run): it ends Cancelled
    cancelled = task_funcs.add.get_result(result.id)
    [error] = cancelled.errors
    assert (cancelled.status, error.exception_class) == (Status.FAILED, task_flows.TaskCancelled)
    assert "sent by mistake" in error.traceback
    recorded = Activity.objects.filter(action="cancel").values_list("actor", flat=True)
    assert list(recorded) == ["tasks-operator"]


def test_a_run_task_shows_its_history_and_its_node_panel_and_is_counted(tasks: str) -> None:
    result = task_funcs.add.enqueue(40, 2)
    _run(result.id)
    viewer = Client()
    viewer.force_login(_user("tasks-viewer", False))
    page = viewer.get(f"/executions/{result.id}")
    assert page.status_code == 200
    assert ADD in page.content.decode()
    history = viewer.get(f"/executions/{result.id}/history/")
    assert history.status_code == 200
    assert "return_value" in history.content.decode()
    panel = viewer.get(f"/executions/{result.id}/nodes/return_value")
    assert panel.status_code == 200
    assert "42" in panel.content.decode()
    scraped = viewer.get("/metrics")
    assert scraped.status_code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scraped.content.decode())
        for s in family.samples
    }
    assert samples[("flowdeck_executions", (("status", "completed"), ("workflow", ADD)))] == 1
