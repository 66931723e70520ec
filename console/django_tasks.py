"""Django's tasks framework, wherever this Django keeps it: `django.tasks` from Django 6.0, the
`django-tasks` backport (`django_tasks`, a dependency of Flowdeck) on Django 5.2.

One import site, so the backend is one class on both: the rest of the console names `django_tasks.Task`,
never the module it came from. The two spell one exception differently (`InvalidTask` in Django,
`InvalidTaskError` in the backport); `InvalidTask` here is whichever this Django raises. `LOGGER` names
the logger the framework's own signal receivers log to.
"""

from __future__ import annotations

from typing import Any

try:  # Django 6.0 and later
    from django.tasks import exceptions as _exceptions
    from django.tasks import signals as _signals
    from django.tasks import task
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
    from django.utils.json import normalize_json

    InvalidTask: type[Exception] = _exceptions.InvalidTask
    SOURCE = "django.tasks"
    LOGGER = "django.tasks"
except ImportError:  # Django 5.2: the backport
    from django_tasks import exceptions as _exceptions  # type: ignore[no-redef]
    from django_tasks import signals as _signals  # type: ignore[no-redef]
    from django_tasks import task  # type: ignore[no-redef,assignment]
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef,assignment]
    from django_tasks.base import (  # type: ignore[no-redef,assignment]
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.utils import normalize_json  # type: ignore[no-redef]

    InvalidTask = _exceptions.InvalidTaskError
    SOURCE = "django_tasks"
    LOGGER = "django_tasks"

TaskResultDoesNotExist: type[Exception] = _exceptions.TaskResultDoesNotExist
TaskResultMismatch: type[Exception] = _exceptions.TaskResultMismatch
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished

__all__ = [
    "LOGGER",
    "SOURCE",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "normalize_json",
    "task",
    "task_enqueued",
    "task_finished",
    "task_started",
]
