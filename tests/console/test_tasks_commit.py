"""When a `django.tasks` enqueue through Flowdeck's backend is written, on SQLite and PostgreSQL: from a
flow step that is retried after its enqueues, each task exists and runs once (its id is derived from the
step's key, `console.task_ids`); with ENQUEUE_ON_COMMIT naming the caller's other database, at that
database's commit (rolled back: no task; committed: the task, under the id the READY result named)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction

from flowdeck.console import client, discovery, django_tasks, runtime, task_flows, task_ids
from flowdeck.console.tasks import FlowdeckBackend
from flowdeck.engine import context
from flowdeck.store.django import models
from tests.console import task_funcs
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
)
from tests.console.test_tasks import BACKEND, Boom, _settled, tasks_options

Status = django_tasks.TaskResultStatus


@pytest.fixture
def tasks(alias: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Flowdeck's backend as TASKS' default; `tests.dispatch` discovered beside the tasks."""
    settings.TASKS = {"default": {"BACKEND": BACKEND, "OPTIONS": tasks_options()}}
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    discovery.discover([task_funcs.__name__])
    runtime.reset()
    return alias


@pytest.fixture
def task_workers(tasks: str) -> Iterator[Workers]:
    found = {path: versions[-1] for path, versions in task_flows.flows_in(task_funcs.__name__).items()}
    workers = Workers(tasks, timedelta(seconds=30), {**found, **task_funcs.FLOWS})
    yield workers
    workers.stop()


def _task_executions(alias: str, module_path: str) -> list[str]:
    return list(
        models.Execution.objects.using(alias).filter(flow_id=module_path).values_list("id", flat=True)
    )


def test_a_retried_step_enqueues_each_of_its_tasks_once(tasks: str, task_workers: Workers) -> None:
    label = f"once-{tasks}"  # the counts are the process's: one label per backend
    eid = client.start("tests.dispatch", label=label)
    record = client.result(eid, timeout=20)
    first, second = task_funcs.ENQUEUED[label]
    assert first == second  # the retry was handed the ids the first attempt was
    first_id, second_id = first.split()
    assert first_id != second_id  # two enqueues of one call: two tasks
    assert record.task_id == first_id
    assert sorted(_task_executions(tasks, "tests.console.task_funcs.record")) == sorted([first_id, second_id])
    for task_id in (first_id, second_id):
        _settled(task_id)
    assert (task_funcs.CALLS[label], task_funcs.CALLS[f"{label}-second"]) == (1, 1)
    done = task_funcs.record.get_result(first_id)
    assert (done.status, done.return_value) == (Status.SUCCESSFUL, 1)


def test_an_atomic_steps_enqueue_is_written_if_and_only_if_the_step_is_recorded(tasks: str) -> None:
    # The step's transaction is the workers' store's, on their thread's connection: in a worker process
    # that store is the process's own (`runtime.store()`), whose hub the commit wakes. These workers keep a
    # store apart from the process's, so on SQLite nothing wakes them for a commit of their own connection
    # (its data version counts other connections' commits): they poll, every 0.2 s.
    found = {path: versions[-1] for path, versions in task_flows.flows_in(task_funcs.__name__).items()}
    workers = Workers(tasks, timedelta(milliseconds=200), {**found, **task_funcs.FLOWS})
    try:
        refused = client.start("tests.refuse-atomic", label=f"refused-{tasks}")
        with pytest.raises(client.FlowExecutionFailed, match="refused after the enqueue"):
            client.result(refused, timeout=20)
        assert _task_executions(tasks, "tests.console.task_funcs.record") == []  # rolled back with the step
        eid = client.start("tests.dispatch-atomic", label=f"atomic-{tasks}")
        task_id = client.result(eid, timeout=20).task_id
        assert _task_executions(tasks, "tests.console.task_funcs.record") == [task_id]
        _settled(task_id)
    finally:
        workers.stop()
    assert task_funcs.record.get_result(task_id).return_value == 1


def test_a_step_that_enqueues_another_task_at_the_same_place_is_refused(tasks: str) -> None:
    ctx = context.Context({}, execution_id="e-1", path="send", attempt=0)
    token = context.stepping(ctx)
    try:
        task_funcs.add.enqueue(1, 2)
    finally:
        context.stepped(token)
    token = context.stepping(ctx)  # a replay of the same step, enqueueing another task first
    try:
        with pytest.raises(task_ids.TaskNotDeterministic, match=r"tests\.console\.task_funcs\.record"):
            task_funcs.record.enqueue("other")
    finally:
        context.stepped(token)
    assert _task_executions(tasks, "tests.console.task_funcs.record") == []


@pytest.fixture
def on_commit(tasks: str, settings: Any) -> str:
    """ENQUEUE_ON_COMMIT naming `default`, the caller's database: another one than the store's."""
    assert tasks != "default"
    options = {**tasks_options(), "ENQUEUE_ON_COMMIT": "default"}
    settings.TASKS = {"default": {"BACKEND": BACKEND, "OPTIONS": options}}
    return tasks


def _callers_row(name: str) -> None:
    """A row of the caller's own on its database (a table of its own: the test database's tables are not
    what this is about)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS callers_rows (name text)")
        cursor.execute("INSERT INTO callers_rows (name) VALUES (%s)", [name])


def _callers_rows() -> list[str]:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT name FROM callers_rows")
        return [row[0] for row in cursor.fetchall()]


def test_an_enqueue_on_the_callers_other_database_waits_for_its_commit(on_commit: str) -> None:
    _callers_row("before")
    with contextlib.suppress(Boom), transaction.atomic(using="default"):
        _callers_row("rolled back")
        lost = task_funcs.add.enqueue(1, 2)
        raise Boom
    assert lost.status == Status.READY
    assert _task_executions(on_commit, "tests.console.task_funcs.add") == []
    heard: list[str] = []

    def hear(sender: type, task_result: Any, **kwargs: Any) -> None:
        heard.append(task_result.id)

    django_tasks.task_enqueued.connect(hear)
    try:
        with transaction.atomic(using="default"):
            _callers_row("kept")
            kept = task_funcs.add.enqueue(3, 4)
            assert _task_executions(on_commit, "tests.console.task_funcs.add") == []  # not before the commit
            assert heard == []
    finally:
        django_tasks.task_enqueued.disconnect(hear)
    assert _task_executions(on_commit, "tests.console.task_funcs.add") == [kept.id]
    assert _callers_rows()[-1:] == ["kept"]
    assert "rolled back" not in _callers_rows()
    assert heard == [kept.id]
    assert task_funcs.add.get_result(kept.id).args == [3, 4]
    with pytest.raises(django_tasks.TaskResultDoesNotExist):
        task_funcs.add.get_result(lost.id)


def test_outside_an_atomic_block_the_enqueue_on_commit_option_writes_at_once(on_commit: str) -> None:
    result = task_funcs.add.enqueue(5, 6)
    assert _task_executions(on_commit, "tests.console.task_funcs.add") == [result.id]


def test_inside_the_stores_own_transaction_the_enqueue_joins_it_whatever_the_option(on_commit: str) -> None:
    with contextlib.suppress(Boom), transaction.atomic(using=on_commit):
        task_funcs.add.enqueue(7, 8)
        assert len(_task_executions(on_commit, "tests.console.task_funcs.add")) == 1  # in this transaction
        raise Boom
    assert _task_executions(on_commit, "tests.console.task_funcs.add") == []


def test_an_option_naming_no_database_is_refused_at_construction() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"ENQUEUE_ON_COMMIT.*'nowhere'"):
        FlowdeckBackend("default", {"OPTIONS": {"ENQUEUE_ON_COMMIT": "nowhere"}})
