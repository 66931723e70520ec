"""Django's own expectations of a tasks backend, held by Flowdeck's, on SQLite and PostgreSQL, under Django
6's `django.tasks` or Django 5.2's backport (whichever this venv has).

Our tests of the expectations Django's test suite (`tests/tasks/`) and the backport's set for a backend:
what `enqueue` answers, what it refuses (a function that is not module-level, a priority out of range, a
queue the backend does not list, a context-taking task without `context`, arguments JSON cannot hold), how
results are read back (equal to the enqueue's answer, refreshed, unknown or another task's id refused),
and what a run leaves (SUCCESSFUL with its value, FAILED with its error for an exception or a
SystemExit or a value JSON cannot hold, the framework's log lines). Expectations that do not apply are
named at the end, with why.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flowdeck.console import client, django_tasks, task_flows
from flowdeck.store.django import models
from tests.console import task_funcs
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
)
from tests.console.test_tasks import BACKEND, _settled, tasks, tasks_options  # noqa: F401  (tasks: fixture)

Status = django_tasks.TaskResultStatus


@pytest.fixture
def task_workers(tasks: str) -> Iterator[Workers]:  # noqa: F811
    found = task_flows.flows_in(task_funcs.__name__)
    workers = Workers(tasks, timedelta(seconds=30), {path: versions[-1] for path, versions in found.items()})
    yield workers
    workers.stop()


def _count(alias: str) -> int:
    return models.Execution.objects.using(alias).count()


# ------------------------------------------------------------------------------------ enqueue


def test_enqueue_answers_a_ready_result_of_the_call(tasks: str) -> None:  # noqa: F811
    result = task_funcs.add.enqueue(1, b=2)
    assert (result.status, result.task, result.args, result.kwargs) == (
        Status.READY,
        task_funcs.add,
        [1],
        {"b": 2},
    )
    assert (result.backend, result.is_finished, result.worker_ids, result.errors) == (
        "default",
        False,
        [],
        [],
    )
    assert (result.started_at, result.last_attempted_at, result.finished_at) == (None, None, None)
    assert result.enqueued_at is not None
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value


async def test_aenqueue_answers_the_same_and_aget_result_reads_it_back(tasks: str) -> None:  # noqa: F811
    result = await task_funcs.shout.aenqueue("hi")
    assert (result.status, result.task, result.args, result.kwargs) == (
        Status.READY,
        task_funcs.shout,
        ["hi"],
        {},
    )
    assert await task_funcs.shout.aget_result(result.id) == result


def test_arguments_json_cannot_hold_are_refused_and_nothing_is_written(tasks: str) -> None:  # noqa: F811
    with pytest.raises(TypeError, match="Unsupported type"):
        task_funcs.add.enqueue(datetime.now(UTC), 1)
    assert _count(tasks) == 0


async def test_aenqueue_refuses_them_too(tasks: str) -> None:  # noqa: F811
    with pytest.raises(TypeError, match="Unsupported type"):
        await task_funcs.add.aenqueue(1, b=object())


# ------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "func", [any, dataclasses.dataclass.__call__, str.upper], ids=["builtin", "slot", "method"]
)
def test_a_function_that_is_not_module_level_is_refused(settings: Any, func: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    with pytest.raises(django_tasks.InvalidTask):
        django_tasks.task(func)


@pytest.mark.parametrize("priority", [-101, 101, 3.1])
def test_a_priority_out_of_range_is_refused(settings: Any, priority: Any) -> None:
    # whatever the backend says of priorities, a value outside Django's range (or not whole) is refused
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    with pytest.raises(django_tasks.InvalidTask, match="priority"):
        task_funcs.add.using(priority=priority)


def test_a_queue_the_backend_does_not_list_is_refused_and_an_empty_list_allows_any(
    tasks: str,  # noqa: F811
    settings: Any,
) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND, "QUEUES": ["default", "emails"]}}
    with pytest.raises(django_tasks.InvalidTask, match="Queue 'sms' is not valid for backend"):
        task_funcs.add.using(queue_name="sms")
    emailed = task_funcs.add.using(queue_name="emails").enqueue(1, 1)
    settings.TASKS = {"default": {"BACKEND": BACKEND, "QUEUES": []}}
    texted = task_funcs.add.using(queue_name="sms").enqueue(2, 2)
    for queue, result in (("emails", emailed), ("sms", texted)):
        found = client.search(task_funcs.add.module_path, where=[f"field:queue={queue}"])
        assert [e.execution_id for e in found.items] == [result.id]


def test_a_context_taking_task_needs_context_first(settings: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    with pytest.raises(django_tasks.InvalidTask, match="first argument of 'context'"):
        django_tasks.task(takes_context=True)(task_funcs.add.func)


def test_async_tasks_are_accepted(settings: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    backend = task_funcs.shout.get_backend()
    assert backend.supports_async_task is True
    backend.validate_task(task_funcs.shout)


# ------------------------------------------------------------------------------------ results


def test_get_result_equals_the_enqueues_answer_until_a_worker_takes_it(tasks: str) -> None:  # noqa: F811
    result = task_funcs.add.enqueue(3, 4)
    assert task_funcs.add.get_result(result.id) == result
    before = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == before


async def test_arefresh_changes_nothing_before_a_worker_takes_it(tasks: str) -> None:  # noqa: F811
    result = await task_funcs.add.aenqueue(3, 4)
    before = dataclasses.asdict(result)
    await result.arefresh()
    assert dataclasses.asdict(result) == before


async def test_an_unknown_id_does_not_exist(tasks: str) -> None:  # noqa: F811
    with pytest.raises(django_tasks.TaskResultDoesNotExist):
        await task_funcs.add.aget_result("123")


def test_an_unknown_id_does_not_exist_sync(tasks: str) -> None:  # noqa: F811
    with pytest.raises(django_tasks.TaskResultDoesNotExist):
        task_funcs.add.get_result("123")


def test_another_tasks_result_is_a_mismatch(tasks: str) -> None:  # noqa: F811
    result = task_funcs.shout.enqueue("hi")
    with pytest.raises(django_tasks.TaskResultMismatch, match="Task does not match"):
        task_funcs.add.get_result(result.id)


# ------------------------------------------------------------------------------------ runs


@pytest.mark.parametrize(
    ("task", "args", "value"), [("add", [1, 2], 3), ("shout", ["a"], ["A"])], ids=["sync", "async"]
)
def test_a_run_ends_successful_with_its_value_and_its_times(
    task_workers: Workers, task: str, args: list[Any], value: Any
) -> None:
    the_task = getattr(task_funcs, task)
    result = the_task.enqueue(*args)
    _settled(result.id)
    result.refresh()
    assert (result.status, result.is_finished, result.return_value, result.errors) == (
        Status.SUCCESSFUL,
        True,
        value,
        [],
    )
    assert len(result.worker_ids) == 1
    assert result.enqueued_at <= result.started_at <= result.last_attempted_at <= result.finished_at


@pytest.mark.parametrize(
    ("task", "args", "kind", "ending"),
    [
        ("explode", ["out of paper"], ValueError, "ValueError: out of paper\n"),
        ("leave", [3], SystemExit, "SystemExit: 3\n"),
        ("unencodable", [], TypeError, None),
    ],
    ids=["exception", "system-exit", "unencodable-value"],
)
def test_a_failing_run_ends_failed_with_its_error_logged(
    task_workers: Workers,
    caplog: pytest.LogCaptureFixture,
    task: str,
    args: list[Any],
    kind: type,
    ending: str | None,
) -> None:
    the_task = getattr(task_funcs, task)
    with caplog.at_level(logging.DEBUG, logger=django_tasks.LOGGER):
        result = the_task.enqueue(*args)
        _settled(result.id)
    result.refresh()
    assert (result.status, result.is_finished) == (Status.FAILED, True)
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    [error] = result.errors
    assert error.exception_class is kind
    assert error.traceback.endswith(ending) if ending else "Unsupported type" in error.traceback
    assert result.enqueued_at <= result.started_at <= result.finished_at
    logged = [r for r in caplog.records if r.name == django_tasks.LOGGER and result.id in r.getMessage()]
    # the enqueue's DEBUG line is the caller's and may come after the worker's two (see the test above)
    assert sorted(r.levelno for r in logged) == [logging.DEBUG, logging.INFO, logging.ERROR]
    worker = [r for r in logged if r.levelno != logging.DEBUG]
    assert [r.levelno for r in worker] == [logging.INFO, logging.ERROR]
    assert "state=FAILED" in worker[-1].getMessage()
    assert worker[-1].exc_info is not None  # the failure's traceback goes to the error monitoring


def test_a_successful_run_logs_enqueued_running_and_successful(
    task_workers: Workers, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger=django_tasks.LOGGER):
        result = task_funcs.add.enqueue(1, 1)
        _settled(result.id)
    logged = [
        r.getMessage()
        for r in caplog.records
        if r.name == django_tasks.LOGGER and result.id in r.getMessage()
    ]
    assert len(logged) == 3, logged
    # The enqueue's line is the caller's, logged once the backend answered; a worker may claim the committed
    # task and log its own two lines first (CI saw it): the worker's two are in order, the enqueue's anywhere.
    running = [line for line in logged if "state=" in line]
    assert [("state=RUNNING" in running[0]), ("state=SUCCESSFUL" in running[1])] == [True, True], logged
    assert sum("enqueued" in line for line in logged) == 1, logged
    assert not any("NoneType" in line for line in logged)


def test_a_context_taking_task_is_handed_its_own_result(task_workers: Workers) -> None:
    result = task_funcs.attempt.enqueue("ctx")
    _settled(result.id)
    assert task_funcs.attempt.get_result(result.id).return_value["id"] == result.id


# ------------------------------------------------------------------------------------ not applicable
#
# - Django's "the immediate backend does not wait for the commit": Flowdeck's enqueue joins the caller's
#   transaction on the store's database (test_tasks.py), the opposite promise, on purpose.
# - `run_after` and priorities: both supported (`supports_defer`, `supports_priority`); test_tasks.py holds
#   a task's priority on its execution and runs a deferred task no earlier than its `run_after`, and the
#   store conformance suite holds the claim's order (`claim_order`) and the deferred start (`deferral`).
# - The task registry's own behaviour (`using()` copies, unknown or missing backends, `call()`, `name`,
#   `module_path`, TaskError's class lookup): Django's code, the same whatever the backend.
# - Pickling a Task or a TaskResult: Django's code too (`Task.__reduce__`, Django 6 only: the backport's Task
#   does not pickle); and in this suite's process Twisted (imported by daphne) takes over the pickling of
#   bound methods and cannot pickle Django 6's classmethod `Task._reconstruct`.
# - The dummy backend's `results` list and `clear()`: a development backend's inspection API.
# - KeyboardInterrupt propagating out of `enqueue`: the immediate backend runs the task inside enqueue;
#   Flowdeck's runs it in a worker, where an interrupt stops the worker and the lease hands the task on.
