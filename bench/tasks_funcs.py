"""The `django.tasks` task W17 enqueues on both backends (`bench/tasks_load.py`): trivial, so what is
measured is the backend's own work per task (enqueue, claim, run, record), as W1's steps are trivial."""

from __future__ import annotations

from flowdeck.console.django_tasks import task


@task
def noop(index: int) -> int:
    return index
