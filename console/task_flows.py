"""A `django.tasks` task as a Flowdeck workflow: one execution per enqueue, one node that calls the function.

The workflow's id is the task's module path (`myapp.tasks.send_mail`), so the console, the API and the CLI
list a task's runs under the name its code has. Its plan is three inputs seeded at the enqueue (`queue`,
`args`, `kwargs`) and one output, `return_value`, whose body calls the function: the engine records the
value, retries what the world did not answer under the backend's schedule, and ends the execution Failed
when the function raises anything else (`TaskFailed`, carrying the exception's class path and traceback,
as Django's `TaskError` does).

Workers resolve a claimed execution by its workflow id and structural hash (`engine.registry`), so every
process that serves tasks must hold the flow before it claims: discovery imports each app's `tasks` module
(and FLOWDECK_FLOW_MODULES) and `flows_in` turns the Task objects it finds there into flows. Finding tasks
by scanning a module, rather than by a side effect of the `@task` decorator, keeps it deterministic: the
flow exists wherever the module is imported, whatever was imported first.
"""

from __future__ import annotations

import importlib
import inspect
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from flowdeck.console import django_tasks
from flowdeck.engine.errors import FlowDomainError, FlowError
from flowdeck.engine.flow import Flow, Meta
from flowdeck.engine.schedule import Schedule

__all__ = [
    "INPUTS",
    "RETURN_VALUE",
    "Runs",
    "TaskBackend",
    "TaskCancelled",
    "TaskFailed",
    "TaskStopped",
    "flows_in",
    "task_flow",
    "tasks_in",
]

RETURN_VALUE = "return_value"
INPUTS = ("queue", "args", "kwargs")
"""The inputs seeded at the enqueue; `queue` is a field an operator can search by (`field:queue=emails`)."""

_HOST = socket.gethostname()


class TaskFailed(FlowDomainError):
    """The task raised: the execution ends Failed. The message's first line is the exception's class path,
    the rest its traceback (what `get_result` hands back as a `TaskError`)."""

    def __init__(self, error: BaseException) -> None:
        kind = type(error)
        self.exception_class_path = f"{kind.__module__}.{kind.__qualname__}"
        super().__init__(f"{self.exception_class_path}\n{''.join(traceback.format_exception(error))}")


class TaskStopped(FlowError):
    """The task's execution stopped for a person (a stop code: the retries ran out, or a crash mid-call of an
    at-most-once node); an operator may resume or end it in the console."""


class TaskCancelled(FlowError):
    """The task's execution was cancelled."""


@dataclass(frozen=True)
class Runs:
    """How a task's node runs: its retry schedule and what it retries (beside FlowRetry and the engine's
    transient errors, a locked database), and what the task signals name as sender and backend."""

    retry: Schedule
    retry_on: tuple[type[BaseException], ...]
    transient: Callable[[BaseException], bool]
    sender: type
    alias: str


@runtime_checkable
class TaskBackend(Protocol):
    """A backend whose tasks run as Flowdeck workflows (`console.tasks.FlowdeckBackend`)."""

    def flow_for(self, task: Any) -> Flow: ...


def task_flow(task: Any, runs: Runs) -> Flow:
    """The one-node workflow of `task`: seeded inputs, then the call recorded as `return_value`."""
    body = _async_body(task, runs) if inspect.iscoroutinefunction(task.func) else _sync_body(task, runs)
    doc = inspect.getdoc(task.func) or ""
    return (
        Flow.init(task.module_path, meta=Meta(description=doc.splitlines()[0] if doc else "", tags=("task",)))
        .input("queue", str)
        .input("args", list[Any])
        .input("kwargs", dict[str, Any])
        .output(RETURN_VALUE, body, retry=runs.retry, retry_on=runs.retry_on, description="the task's call")
    )


def tasks_in(module: ModuleType) -> list[Any]:
    """The Task objects a module holds at top level, in definition order."""
    return [value for value in vars(module).values() if isinstance(value, django_tasks.Task)]


def flows_in(module_name: str) -> dict[str, tuple[Flow, ...]]:
    """The workflows of the tasks a module declares on a Flowdeck backend, by module path (discovery's
    shape: each with its one version)."""
    found: dict[str, tuple[Flow, ...]] = {}
    for task in tasks_in(importlib.import_module(module_name)):
        backend = task.get_backend()
        if isinstance(backend, TaskBackend):
            found[task.module_path] = (backend.flow_for(task),)
    return found


# ---------------------------------------------------------------------------------------- the call


def _sync_body(task: Any, runs: Runs) -> Callable[[Any], Any]:
    def call_task(ctx: Any) -> Any:
        result = _started(task, runs, ctx)
        try:
            value = django_tasks.normalize_json(task.func(*_arguments(task, result), **ctx.kwargs))
        except (Exception, SystemExit) as error:  # as Django's own backends: all but an interrupt
            raise _judged(error, task, runs, result) from error
        return _finished(task, runs, result, value)

    return call_task


def _async_body(task: Any, runs: Runs) -> Callable[[Any], Any]:
    async def call_task(ctx: Any) -> Any:
        result = _started(task, runs, ctx)
        try:
            value = django_tasks.normalize_json(await task.func(*_arguments(task, result), **ctx.kwargs))
        except (Exception, SystemExit) as error:  # as Django's own backends: all but an interrupt
            raise _judged(error, task, runs, result) from error
        return _finished(task, runs, result, value)

    return call_task


def _arguments(task: Any, result: Any) -> list[Any]:
    args = list(result.args)
    return [django_tasks.TaskContext(task_result=result), *args] if task.takes_context else args


def _judged(error: BaseException, task: Any, runs: Runs, result: Any) -> BaseException:
    """What the engine is handed for a task's exception: a retryable one (FlowRetry, the node's
    `retry_on`, a transient database error) as it is, so the schedule asks again; anything else as
    `TaskFailed`, which ends the execution Failed (Django's FAILED), after `task_finished` is sent."""
    if isinstance(error, (FlowError, *runs.retry_on)) or runs.transient(error):
        return error
    failed = TaskFailed(error)
    ended = _evolved(result, status=django_tasks.TaskResultStatus.FAILED)
    ended.errors.append(
        django_tasks.TaskError(
            exception_class_path=failed.exception_class_path,
            traceback="".join(traceback.format_exception(error)),
        )
    )
    django_tasks.task_finished.send(runs.sender, task_result=ended)
    return failed


def _started(task: Any, runs: Runs, ctx: Any) -> Any:
    """The RUNNING result the task's context and `task_started` carry (one worker id per attempt so far)."""
    result = django_tasks.TaskResult(
        task=task,
        id=ctx.execution_id,
        status=django_tasks.TaskResultStatus.RUNNING,
        enqueued_at=None,
        started_at=None,
        finished_at=None,
        last_attempted_at=None,
        args=list(ctx.args),
        kwargs=dict(ctx.kwargs),
        backend=runs.alias,
        errors=[],
        worker_ids=[_HOST] * (ctx.attempt + 1),
    )
    django_tasks.task_started.send(runs.sender, task_result=result)
    return result


def _finished(task: Any, runs: Runs, result: Any, value: Any) -> Any:
    """`task_finished` with the (JSON-normalized: a value that is not fails the task) return value."""
    ended = _evolved(result, status=django_tasks.TaskResultStatus.SUCCESSFUL)
    object.__setattr__(ended, "_return_value", value)
    django_tasks.task_finished.send(runs.sender, task_result=ended)
    return value


def _evolved(result: Any, **changes: Any) -> Any:
    """A copy of a TaskResult with `changes` (its dataclass has slots and `_return_value` out of init)."""
    fields = {name: getattr(result, name) for name in django_tasks.TaskResult.__dataclass_fields__}
    fields.pop("_return_value", None)
    fields["errors"] = list(result.errors)
    return django_tasks.TaskResult(**{**fields, **changes})
