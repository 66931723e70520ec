"""The `django.tasks` functions the tasks-backend tests enqueue (`tests/console/test_tasks.py`): module
level, as a worker imports them. Decorated under whatever TASKS holds at import; the tests switch TASKS to
Flowdeck's backend, which every task then resolves (`Task.get_backend` reads the alias each time)."""

from __future__ import annotations

from typing import Any

from flowdeck.console.django_tasks import TaskContext, task

CALLS: dict[str, int] = {}
"""How often `flaky` was called, per key (the workers run in this process, on a thread)."""


@task
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@task
def explode(reason: str) -> None:
    raise ValueError(reason)


@task
async def shout(word: str, *, times: int = 1) -> list[str]:
    return [word.upper()] * times


@task(takes_context=True)
def attempt(context: TaskContext, label: str) -> dict[str, Any]:
    return {"label": label, "attempt": context.attempt, "id": context.task_result.id}


@task
def flaky(key: str) -> str:
    """Refused once by the world (ConnectionError, retried by default), then answers."""
    CALLS[key] = CALLS.get(key, 0) + 1
    if CALLS[key] == 1:
        raise ConnectionError("the mail server hung up")
    return f"sent after {CALLS[key]} calls"


@task
def unreachable() -> None:
    """The world never answers: retried until the schedule is spent, then stopped (F0003)."""
    raise TimeoutError("the mail server never answered")


def hidden() -> None:
    """A function with no task of it at the module's top level: a worker would never find one."""
