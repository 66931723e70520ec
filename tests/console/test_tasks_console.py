"""A `django.tasks` task enqueued through Flowdeck's backend is listed by the REST API beside the flows,
under its module path, with its executions on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from flowdeck.console import live, runtime
from flowdeck.console.models import create_token
from tests.console import task_funcs
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401
from tests.console.test_views import _user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

ADD = "tests.console.task_funcs.add"


@pytest.fixture
def tasks(backend: str, settings: Any) -> Iterator[str]:
    settings.TASKS = {"default": {"BACKEND": "flowdeck.console.tasks.FlowdeckBackend"}}
    runtime.reset()
    live.reset()
    yield backend
    live.reset()
    runtime.reset()


def test_the_api_lists_a_task_under_its_module_path(tasks: str) -> None:
    result = task_funcs.add.enqueue(20, 22)
    headers = {"Authorization": f"Bearer {create_token(_user('tasks-reader', False), 'tasks')}"}
    listed = Client().get("/api/v1/executions", {"workflow": ADD}, headers=headers)
    assert listed.status_code == 200, listed.content
    assert [(i["executionId"], i["flowId"]) for i in listed.json()["items"]] == [(result.id, ADD)]
    detail = Client().get(f"/api/v1/executions/{result.id}", headers=headers)
    assert detail.status_code == 200, detail.content
