"""The id a `django.tasks` enqueue gives its execution, decided before it is written.

From inside a flow step (or another task: its call is a step too), the id is derived from the step's call
(`engine.context.current_step`): the enclosing execution's id, the node's durable path and the number of
the enqueue within the call, counted from 1 on every attempt. A step that enqueues, then crashes or is
retried, enqueues again under the same id; the store's create-if-absent writes nothing the second time, so
the task runs once however often the step is replayed. The number is the enqueue's place in the call, not
a random draw, so a body must enqueue its tasks in the same order on every attempt (as it must record its
effects anywhere); one that enqueues another task at the same place is refused (`TaskNotDeterministic`).

Outside a step the id is random, decided up front when the write waits for a commit (ENQUEUE_ON_COMMIT),
so the READY result handed back at once names the execution written later.
"""

from __future__ import annotations

import uuid

from flowdeck.console import django_tasks
from flowdeck.engine import context

__all__ = ["TaskNotDeterministic", "new_task_id", "step_task_id"]

_NAMESPACE = uuid.UUID("6f1f6d8e-6c2a-4f55-9a43-6b1a3c0d7e21")
"""The UUID namespace of ids derived from a step's effect key (any fixed value: it only has to stay)."""


class TaskNotDeterministic(django_tasks.InvalidTask):  # type: ignore[misc,valid-type]
    """A replayed step enqueued, at the place of an earlier enqueue, a different task: its body does not
    enqueue the same tasks in the same order on every attempt."""

    def __init__(self, module_path: str, execution_id: str) -> None:
        super().__init__(
            f"a replayed step enqueued {module_path!r} where its earlier attempt enqueued execution "
            f"{execution_id!r} of another task: a step must enqueue the same tasks in the same order"
        )
        self.module_path = module_path
        self.execution_id = execution_id


def step_task_id(step: context.StepCall) -> str:
    """The id of the step call's next enqueue: the same on every attempt and replay of the step."""
    return uuid.uuid5(_NAMESPACE, step.effect_key()).hex


def new_task_id() -> str:
    """A fresh id, in the engine's own shape (32 hex digits)."""
    return uuid.uuid4().hex
