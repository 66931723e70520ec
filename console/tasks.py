"""Flowdeck as a `django.tasks` backend: each enqueue a durable one-node execution (`console.task_flows`).

    TASKS = {"default": {"BACKEND": "flowdeck.console.tasks.FlowdeckBackend"}}

One class on Django 6.x (`django.tasks`) and on Django 5.2 (the `django-tasks` backport):
`console.django_tasks` picks the base. `enqueue` goes through the application client's start
(`console.client.start`), so inside the caller's `transaction.atomic()` on the store's database the task
is written in that transaction (rolled back: no task; committed: the workers are woken at the commit), and
outside one it commits on its own. The answer is a READY `TaskResult` whose id is the execution id;
`get_result` reads the execution back (`console.task_results`). Where the store has a database of its own,
OPTIONS' ENQUEUE_ON_COMMIT names the caller's: an enqueue inside an atomic block there is written at its
commit (`transaction.on_commit`), its id decided up front. From inside a flow step the id is derived from
the step's key (`console.task_ids`), so a replayed step enqueues nothing new.

Constructing the backend reads its OPTIONS and nothing else (Django builds backends at decoration time,
before any database may be used). Not supported yet, and said so by the `supports_*` flags: `run_after`
(defer) and priorities (the claim orders by readiness only).
"""

from __future__ import annotations

import importlib
import threading
import weakref
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction
from django.utils.module_loading import import_string
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flowdeck.console import client, django_tasks, runtime, task_flows, task_ids, task_results
from flowdeck.engine import context as engine_context
from flowdeck.engine import errors, tracing
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.engine.schedule import Schedule

__all__ = ["FlowdeckBackend", "TaskNotImportable", "TaskOptions"]

# A task's workflow, per backend alias, options and module path, shared by every instance of the backend:
# Django builds one per thread (its handler is thread-local), and discovery takes a second build of one
# workflow for a second declaration of its id.
_flows: dict[tuple[str, TaskOptions, str], Flow] = {}
_flows_lock = threading.Lock()


class TaskNotImportable(django_tasks.InvalidTask):  # type: ignore[misc,valid-type]
    """A worker could not import this task's function, so it could never run it."""

    def __init__(self, module_path: str, why: str) -> None:
        super().__init__(f"task {module_path!r} cannot be run by a Flowdeck worker: {why}")
        self.module_path = module_path
        self.why = why


class TaskOptions(BaseModel):
    """The backend's OPTIONS: how a task's call is retried when the world does not answer. Every exception
    in RETRY_ON (dotted paths), a FlowRetry and a transient database error are asked again, RETRY_ATTEMPTS
    times at most, RETRY_INITIAL seconds first, times RETRY_FACTOR each time, at most RETRY_MAX; then the
    execution stops (F0003) for an operator, and the task reads as FAILED."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    RETRY_ATTEMPTS: int = Field(5, ge=0)
    RETRY_INITIAL: float = Field(1.0, gt=0)
    RETRY_FACTOR: float = Field(2.0, ge=1)
    RETRY_MAX: float = Field(300.0, gt=0)
    RETRY_ON: tuple[str, ...] = ("builtins.ConnectionError", "builtins.TimeoutError")
    ENQUEUE_ON_COMMIT: str | None = None
    """A database alias other than the store's: an enqueue inside an atomic block there is written when
    that block commits (`transaction.on_commit`), and not at all when it rolls back."""

    def schedule(self) -> Schedule:
        initial, most = timedelta(seconds=self.RETRY_INITIAL), timedelta(seconds=self.RETRY_MAX)
        return Schedule.exponential(initial, self.RETRY_FACTOR, most).take(self.RETRY_ATTEMPTS)


class FlowdeckBackend(django_tasks.BaseTaskBackend):  # type: ignore[misc,valid-type]
    """Tasks as durable Flowdeck executions, on the store's database (FLOWDECK_DATABASE_ALIAS)."""

    supports_defer = True  # run_after: the execution's deferred start (store.deferral)
    supports_async_task = True
    supports_get_result = True
    supports_priority = True  # Django's -100..100 is the claim's own scale (store.claim_order)

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        try:
            self.task_options = TaskOptions.model_validate(self.options)
        except ValidationError as error:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]['OPTIONS'] is invalid: {error}") from error
        later = self.task_options.ENQUEUE_ON_COMMIT
        if later is not None and later not in settings.DATABASES:  # settings only: no database work here
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS']['ENQUEUE_ON_COMMIT'] names no database: {later!r}"
            )
        self._tasks: dict[str, Any] = {}
        self._served: weakref.WeakKeyDictionary[FlowEngine, set[str]] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------------------ validation

    def validate_task(self, task: Any) -> None:
        """Django's checks, then the refusal of a function a worker could not import by its module path."""
        super().validate_task(task)
        func = task.func
        if func.__module__ == "__main__":
            raise TaskNotImportable(task.module_path, "it is defined in __main__, not a worker's")
        if "<" in func.__qualname__:
            raise TaskNotImportable(task.module_path, "a lambda or a nested function has no importable name")
        if "." in func.__qualname__:
            raise TaskNotImportable(task.module_path, "it is not a module-level function")

    def _findable(self, task: Any) -> None:
        """At the enqueue (its module now fully imported): a worker importing the module finds this task
        there, as discovery will."""
        module_name = task.func.__module__
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise TaskNotImportable(task.module_path, f"its module does not import: {error}") from error
        if not any(found.func is task.func for found in task_flows.tasks_in(module)):
            raise TaskNotImportable(
                task.module_path, f"{module_name} holds no task of it at top level (decorate it with @task)"
            )

    # ------------------------------------------------------------------------------ the workflow

    def flow_for(self, task: Any) -> Flow:
        """The task's workflow under this backend's retry options (built once per process)."""
        key = (self.alias, self.task_options, task.module_path)
        with _flows_lock:
            if key not in _flows:
                runs = task_flows.Runs(
                    retry=self.task_options.schedule(),
                    retry_on=tuple(_exception(name) for name in self.task_options.RETRY_ON),
                    transient=runtime.TRANSIENT,
                    sender=type(self),
                    alias=self.alias,
                )
                _flows[key] = task_flows.task_flow(task, runs)
        self._tasks[task.module_path] = task
        return _flows[key]

    def _serve(self, task: Any) -> None:
        """The process's engine serves the task's workflow (in memory: discovery registers it with the
        store in every process that imports the task's module)."""
        engine = runtime.served_engine()
        served = self._served.setdefault(engine, set())
        if task.module_path not in served:
            engine.serve(task.module_path, self.flow_for(task))
            served.add(task.module_path)

    # ------------------------------------------------------------------------------ enqueue

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Write the task's execution and answer it READY (`task_enqueued` is sent once it is written):
        in the caller's transaction inside one on the store's database; at the commit of the caller's
        transaction on ENQUEUE_ON_COMMIT's alias; at once otherwise. From inside a flow step (or a task)
        the id is derived from the step's key, so a replayed step finds its task rather than adding one."""
        self.validate_task(task)
        self._findable(task)
        self._serve(task)
        args = django_tasks.normalize_json(list(args))
        kwargs = django_tasks.normalize_json(dict(kwargs))
        step = engine_context.current_step()
        eid = task_ids.step_task_id(step) if step is not None else None
        later = self._commit_alias()
        if later is not None:
            eid = eid or task_ids.new_task_id()
            transaction.on_commit(lambda: self._write(task, eid, args, kwargs), using=later)
            return self._ready(task, eid, args, kwargs, runtime.store().clock.now())
        return self._write(task, eid, args, kwargs)

    def _commit_alias(self) -> str | None:
        """ENQUEUE_ON_COMMIT's alias when the caller is inside an atomic block there and not inside one on
        the store's database (that one the enqueue joins)."""
        alias = self.task_options.ENQUEUE_ON_COMMIT
        if alias is None or runtime.caller_transaction() is not None:
            return None
        return alias if connections[alias].in_atomic_block else None

    def _write(self, task: Any, eid: str | None, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Start the task's execution; an id already taken by this task's execution (a replayed step) is
        that execution's result, read back, and no second `task_enqueued`."""
        path, traces = task.module_path, runtime.served_engine().tracing
        try:
            with traces.starting("EnqueueTask", path, {tracing.WORKFLOW_ID: path}) as span:
                eid, created = client.start_created(
                    path,
                    execution_id=eid,
                    priority=task.priority,
                    run_after=task.run_after,
                    queue=task.queue_name,
                    args=args,
                    kwargs=kwargs,
                )
                span.execution(eid)
        except errors.FlowDuplicateExecution:
            if eid is None:
                raise
            return self._replayed(task, eid)
        result = self._ready(task, eid, args, kwargs, created)
        django_tasks.task_enqueued.send(type(self), task_result=result)
        return result

    def _replayed(self, task: Any, eid: str) -> Any:
        """The result of the task a replayed step enqueued before; a step that enqueues another task at the
        same place this time is not deterministic, and is told so."""
        try:
            found = self.get_result(eid)
        except django_tasks.TaskResultDoesNotExist:
            found = None
        if found is None or found.task.module_path != task.module_path:
            raise task_ids.TaskNotDeterministic(task.module_path, eid)
        return found

    def _ready(
        self, task: Any, eid: str, args: list[Any], kwargs: dict[str, Any], enqueued_at: datetime
    ) -> Any:
        """A READY result, as `get_result` reads the execution until a worker claims it."""
        return django_tasks.TaskResult(
            task=task,
            id=eid,
            status=django_tasks.TaskResultStatus.READY,
            enqueued_at=enqueued_at,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

    # ------------------------------------------------------------------------------ results

    def get_result(self, result_id: str) -> Any:
        """`aget_result`, blocking (as the client's reads are: not from a running event loop, and not
        inside a transaction on the store's SQLite database)."""
        return client.blocking_read("get_result", lambda: self.aget_result(result_id))

    async def aget_result(self, result_id: str) -> Any:
        """The task's execution as a `TaskResult`; `TaskResultDoesNotExist` for an unknown id or an
        execution that is not one of this backend's tasks."""
        store = (await runtime.engine()).store
        state = await store.get_execution(result_id)
        task = None if state is None else self._task_of(state.flow_id)
        if state is None or task is None:
            raise django_tasks.TaskResultDoesNotExist(result_id)
        fields = await store.get_all_fields(result_id)
        events = (await store.get_history(result_id)).events
        return task_results.result_of(task, self.alias, state, fields, events, store.clock.now())

    def _task_of(self, module_path: str) -> Any | None:
        """The task whose workflow id is `module_path`: one this backend built, else found in its module."""
        if module_path not in self._tasks:
            module_name = module_path.rpartition(".")[0]
            try:
                module = importlib.import_module(module_name) if module_name else None
            except ImportError:
                return None
            found = [t for t in task_flows.tasks_in(module) if t.module_path == module_path] if module else []
            if not found:
                return None
            self._tasks[module_path] = found[0]
        return self._tasks[module_path]


def _exception(path: str) -> type[BaseException]:
    """An exception class named in RETRY_ON."""
    try:
        found = import_string(path)
    except ImportError as error:
        raise ImproperlyConfigured(f"RETRY_ON names {path!r}, which does not import") from error
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise ImproperlyConfigured(f"RETRY_ON names {path!r}, which is not an exception class")
    return found
