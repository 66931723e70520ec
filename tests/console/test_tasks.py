"""Flowdeck as the `django.tasks` backend (`console.tasks.FlowdeckBackend`), on SQLite (a file in WAL mode)
and PostgreSQL, with Django 6's `django.tasks` or Django 5.2's backport, whichever this venv has: an enqueue
joins the caller's transaction (rolled back: no task; committed: workers on a store of their own, woken at
the commit, run it), `get_result` reads Flowdeck's states as Django's, a raising task ends FAILED with its
error, a function a worker could not import is refused by name, and the task's runs are found under its
module path and queue (the REST API's list: `test_tasks_console.py`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from flowdeck.console import client, discovery, django_tasks, runtime, task_flows
from flowdeck.console.tasks import FlowdeckBackend, TaskNotImportable
from flowdeck.store import deferral
from flowdeck.store.django import models
from tests.console import task_funcs
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
)

BACKEND = "flowdeck.console.tasks.FlowdeckBackend"
Status = django_tasks.TaskResultStatus


class Boom(Exception):
    """The caller's own failure, rolling its transaction back."""


@pytest.fixture
def tasks(alias: str, settings: Any) -> str:
    """Flowdeck's backend as TASKS' default, its back-off short; the executions on `alias`."""
    settings.TASKS = {"default": {"BACKEND": BACKEND, "OPTIONS": tasks_options()}}
    return alias


def tasks_options() -> dict[str, Any]:
    return {"RETRY_INITIAL": 0.01, "RETRY_MAX": 0.05}


@pytest.fixture
def task_workers(tasks: str) -> Iterator[Workers]:
    """Workers serving the test tasks as discovery finds them, polling every 30 s: what they run sooner, the
    wake at the commit brought them."""
    found = task_flows.flows_in(task_funcs.__name__)
    workers = Workers(tasks, timedelta(seconds=30), {path: versions[-1] for path, versions in found.items()})
    yield workers
    workers.stop()


def _settled(result_id: str) -> None:
    """Wait (on the store's changes, no sleep) until the execution has ended, however it ended."""
    with contextlib.suppress(client.FlowExecutionNotCompleted):
        client.result(result_id, timeout=20)


def test_a_rolled_back_enqueue_leaves_no_task(tasks: str) -> None:
    with contextlib.suppress(Boom), transaction.atomic(using=tasks):
        result = task_funcs.add.enqueue(2, 3)
        assert result.status == Status.READY
        raise Boom
    assert models.Execution.objects.using(tasks).count() == 0
    with pytest.raises(django_tasks.TaskResultDoesNotExist):
        task_funcs.add.get_result(result.id)


def test_a_committed_enqueue_runs_on_the_workers_and_reads_successful(
    tasks: str, task_workers: Workers
) -> None:
    hub = runtime.store().hub
    with transaction.atomic(using=tasks):
        result = task_funcs.add.enqueue(2, b=3)
        before = hub.generation
        assert models.Execution.objects.using(tasks).filter(id=result.id).exists()  # in this transaction
    assert hub.generation > before  # woken at the commit
    assert (result.status, result.args, result.kwargs, result.backend) == (
        Status.READY,
        [2],
        {"b": 3},
        "default",
    )
    _settled(result.id)
    done = task_funcs.add.get_result(result.id)
    assert (done.status, done.return_value, done.args, done.kwargs) == (Status.SUCCESSFUL, 5, [2], {"b": 3})
    assert (done.is_finished, done.errors, len(done.worker_ids)) == (True, [], 1)
    assert done.enqueued_at <= done.started_at <= done.last_attempted_at <= done.finished_at
    result.refresh()
    assert (result.status, result.return_value) == (Status.SUCCESSFUL, 5)


def test_a_tasks_priority_is_its_executions(tasks: str) -> None:
    """Django's task priority (-100 to 100) orders the claim as a flow's does (store.claim_order)."""
    urgent = task_funcs.add.using(priority=60).enqueue(1, 1)
    plain = task_funcs.add.enqueue(1, 2)
    found = dict(models.Execution.objects.using(tasks).values_list("id", "priority"))
    assert (found[urgent.id], found[plain.id]) == (60, 0)
    with pytest.raises(django_tasks.InvalidTask):
        task_funcs.add.using(priority=101)


def test_a_deferred_task_waits_for_its_run_after(tasks: str, task_workers: Workers) -> None:
    """`run_after` is a durable wake time (store.deferral): the task's execution is written with a wait
    row due then, READY until a worker claims it, and no worker starts it earlier."""
    when = timezone.now() + timedelta(seconds=2)
    result = task_funcs.add.using(run_after=when).enqueue(2, 2)
    assert result.status == Status.READY
    wait = models.Wait.objects.using(tasks).get(execution_id=result.id)
    assert (wait.path, wait.at) == (deferral.PATH, when)
    _settled(result.id)
    done = task_funcs.add.get_result(result.id)
    assert (done.status, done.return_value) == (Status.SUCCESSFUL, 4)
    assert done.started_at >= when


def test_a_raising_task_ends_failed_with_its_error(tasks: str, task_workers: Workers) -> None:
    result = task_funcs.explode.enqueue("out of paper")
    _settled(result.id)
    failed = task_funcs.explode.get_result(result.id)
    assert failed.status == Status.FAILED
    assert failed.finished_at is not None
    [error] = failed.errors
    assert error.exception_class is ValueError
    assert error.traceback.startswith("Traceback")
    assert "ValueError: out of paper" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        _ = failed.return_value


def test_async_tasks_context_and_retries_of_the_world_not_answering(
    tasks: str, task_workers: Workers
) -> None:
    shouted = task_funcs.shout.enqueue("hi", times=2)
    context = task_funcs.attempt.enqueue("first")
    flaky = task_funcs.flaky.enqueue(context.id)
    for result in (shouted, context, flaky):
        _settled(result.id)
    assert task_funcs.shout.get_result(shouted.id).return_value == ["HI", "HI"]
    assert task_funcs.attempt.get_result(context.id).return_value == {
        "label": "first",
        "attempt": 1,
        "id": context.id,
    }
    # a ConnectionError is the world not answering (OPTIONS' RETRY_ON default): asked again, not failed
    assert task_funcs.flaky.get_result(flaky.id).return_value == "sent after 2 calls"


def test_a_task_the_world_never_answers_reads_failed_once_its_retries_are_spent(
    tasks: str, task_workers: Workers
) -> None:
    result = task_funcs.unreachable.enqueue()
    _settled(result.id)  # Stopped F0003 counts as settled: it waits for an operator
    spent = task_funcs.unreachable.get_result(result.id)
    [error] = spent.errors
    assert (spent.status, error.exception_class_path) == (
        Status.FAILED,
        "flowdeck.console.task_flows.TaskStopped",
    )
    assert error.traceback.startswith("F0003")
    assert error.exception_class is task_flows.TaskStopped


def test_the_task_signals_are_sent(tasks: str, task_workers: Workers) -> None:
    heard: list[tuple[str, str, type]] = []

    def receiver(name: str) -> Any:
        def hear(sender: type, task_result: Any, **kwargs: Any) -> None:
            heard.append((name, str(task_result.status), sender))

        return hear

    receivers = {name: receiver(name) for name in ("enqueued", "started", "finished")}
    signals = {
        "enqueued": django_tasks.task_enqueued,
        "started": django_tasks.task_started,
        "finished": django_tasks.task_finished,
    }
    for name, signal in signals.items():
        signal.connect(receivers[name])
    try:
        ok = task_funcs.add.enqueue(1, 1)
        _settled(ok.id)
        bad = task_funcs.explode.enqueue("no")
        _settled(bad.id)
    finally:
        for name, signal in signals.items():
            signal.disconnect(receivers[name])
    assert heard == [
        ("enqueued", Status.READY, FlowdeckBackend),
        ("started", Status.RUNNING, FlowdeckBackend),
        ("finished", Status.SUCCESSFUL, FlowdeckBackend),
        ("enqueued", Status.READY, FlowdeckBackend),
        ("started", Status.RUNNING, FlowdeckBackend),
        ("finished", Status.FAILED, FlowdeckBackend),
    ]


def test_a_task_is_searched_under_its_module_path_and_its_queue(tasks: str) -> None:
    result = task_funcs.add.enqueue(20, 22)
    found = client.search("tests.console.task_funcs.add", where=["field:queue=default"])
    assert [e.execution_id for e in found.items] == [result.id]


def test_an_unknown_or_foreign_result_id_does_not_exist(tasks: str) -> None:
    eid = client.start("greet", name="ada")  # a flow's execution, not a task's
    for result_id in ("nope", eid):
        with pytest.raises(django_tasks.TaskResultDoesNotExist):
            task_funcs.add.get_result(result_id)


def _nested() -> Any:
    def inner() -> None:
        pass

    return inner


def _in_main() -> None:
    pass


_in_main.__module__ = "__main__"


@pytest.mark.parametrize(
    ("func", "why"),
    [
        (lambda: None, "a lambda or a nested function"),
        (_nested(), "Task function must be defined at a module level"),
        (_in_main, "defined in __main__"),
    ],
    ids=["lambda", "nested", "main"],
)
def test_a_function_a_worker_cannot_import_is_refused_by_name(settings: Any, func: Any, why: str) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    with pytest.raises(django_tasks.InvalidTask, match=why) as refused:
        django_tasks.task(func)
    if isinstance(refused.value, TaskNotImportable):
        assert func.__qualname__ in refused.value.module_path


def test_a_task_its_module_does_not_hold_is_refused_at_enqueue(settings: Any) -> None:
    settings.TASKS = {"default": {"BACKEND": BACKEND}}
    stray = django_tasks.task(task_funcs.hidden)  # valid, but bound to no name of its module
    with pytest.raises(TaskNotImportable, match="holds no task of it") as refused:
        stray.enqueue()
    assert refused.value.module_path == "tests.console.task_funcs.hidden"


def test_the_backend_is_built_without_the_database_and_checks_its_options() -> None:
    backend = FlowdeckBackend("default", {"OPTIONS": {"RETRY_ATTEMPTS": 2}})  # no database access here
    assert (backend.supports_get_result, backend.supports_async_task) == (True, True)
    assert (backend.supports_defer, backend.supports_priority) == (True, True)
    with pytest.raises(ImproperlyConfigured, match="RETRY_ATTEMPS"):
        FlowdeckBackend("default", {"OPTIONS": {"RETRY_ATTEMPS": 2}})


def test_discovery_serves_the_tasks_of_a_module_under_their_module_paths(
    tasks: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    # a backend built in another thread (Django's are per thread) builds the same workflows
    elsewhere = FlowdeckBackend("default", {"OPTIONS": tasks_options()})
    assert elsewhere.flow_for(task_funcs.add) is task_funcs.add.get_backend().flow_for(task_funcs.add)
    served = discovery.discover([task_funcs.__name__])
    assert served["tests.console.task_funcs.add"] is elsewhere.flow_for(task_funcs.add)
    found = task_flows.flows_in(task_funcs.__name__)
    assert sorted(found) == [
        f"tests.console.task_funcs.{n}"
        for n in (
            "add",
            "attempt",
            "explode",
            "flaky",
            "leave",
            "record",
            "shout",
            "unencodable",
            "unreachable",
        )
    ]
    assert found["tests.console.task_funcs.add"][0].meta.description == "Add two numbers."


def test_the_framework_is_this_djangos_own_or_the_backport() -> None:
    import django

    expected = "django.tasks" if django.VERSION >= (6,) else "django_tasks"
    assert (django_tasks.SOURCE, issubclass(FlowdeckBackend, django_tasks.BaseTaskBackend)) == (
        expected,
        True,
    )
