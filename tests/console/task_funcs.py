"""The `django.tasks` functions the tasks-backend tests enqueue (`tests/console/test_tasks.py`): module
level, as a worker imports them. Decorated under whatever TASKS holds at import; the tests switch TASKS to
Flowdeck's backend, which every task then resolves (`Task.get_backend` reads the alias each time)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flowdeck.console.django_tasks import TaskContext, task
from flowdeck.engine import Flow, FlowDomainError
from flowdeck.engine.schedule import Schedule

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


@task
def leave(code: int) -> None:
    """Asks the process to exit: a task's SystemExit fails the task, as Django's own backends have it."""
    raise SystemExit(code)


@task
def unencodable() -> object:
    """Returns what JSON cannot hold: the task fails (TypeError), it does not complete."""
    return {1, 2}


def hidden() -> None:
    """A function with no task of it at the module's top level: a worker would never find one."""


@task
def record(key: str) -> int:
    """Count its calls per key: how often the task ran, whoever enqueued it how often."""
    CALLS[key] = CALLS.get(key, 0) + 1
    return CALLS[key]


ENQUEUED: dict[str, list[str]] = {}
"""The task ids `dispatch`'s step was handed, per label, one per attempt."""


def _enqueue_then_fail_once(ctx: Any) -> str:
    """Enqueue `record`, then fail the first attempt (after the enqueue): the retry enqueues again."""
    first = record.enqueue(ctx.label)
    second = record.enqueue(f"{ctx.label}-second")
    ENQUEUED.setdefault(ctx.label, []).append(f"{first.id} {second.id}")
    if ctx.attempt == 0:
        raise ConnectionError("the step's own call hung up, after its enqueues")
    return first.id


dispatch = (
    Flow.init("tests.dispatch")
    .input("label", str)
    .output(
        "task_id",
        _enqueue_then_fail_once,
        type=str,
        retry=Schedule.exponential(timedelta(milliseconds=10), 2.0, timedelta(milliseconds=50)).take(3),
        retry_on=(ConnectionError,),
    )
)
"""A flow whose step enqueues two tasks and is retried once: each task must exist and run once."""


def _enqueue_in_the_steps_transaction(ctx: Any) -> str:
    """An atomic step's enqueue: written in the transaction that records the step."""
    return record.enqueue(ctx.label).id


dispatch_atomic = (
    Flow.init("tests.dispatch-atomic")
    .input("label", str)
    .output("task_id", _enqueue_in_the_steps_transaction, type=str, atomic=True)
)
"""A flow whose atomic step enqueues: the task exists if and only if the step is recorded."""


class Refused(FlowDomainError):
    """The atomic step's own refusal, after its enqueue: its transaction rolls back, the task with it."""


def _enqueue_then_refuse(ctx: Any) -> str:
    record.enqueue(ctx.label)
    raise Refused("refused after the enqueue")


refuse_atomic = (
    Flow.init("tests.refuse-atomic")
    .input("label", str)
    .output("task_id", _enqueue_then_refuse, type=str, atomic=True)
)

FLOWS = {
    "tests.dispatch": dispatch,
    "tests.dispatch-atomic": dispatch_atomic,
    "tests.refuse-atomic": refuse_atomic,
}
