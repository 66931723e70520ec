"""The tasks and the flow the tasks SIGKILL test runs in `flowdeck_workers` processes
(`test_tasks_sigkill.py`). Each call leaves a line in a file of the test's folder, so the test counts the
calls across processes and waits on files, not on time.

`held` blocks until the test lets it go (the `go` file): the kill lands mid-call, before its result is
recorded. `quick` ends at once: killed after its result was recorded, it must not run again. The flow's
step enqueues `quick`, then blocks as `held` does: the step is replayed after the kill, and the task it
enqueued must still be one execution.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from flowdeck.console.django_tasks import task
from flowdeck.engine import Flow

__all__ = ["FLOWS", "held", "quick", "step_flow"]

DEADLINE = 120.0
"""Seconds a blocked body waits for the test before it gives up (a test that died left it there)."""


def _called(folder: str, name: str) -> int:
    """Note one call of `name`; answer how many there have been, this one included."""
    path = Path(folder) / f"{name}.calls"
    with path.open("a") as calls:
        calls.write("call\n")
    return len(path.read_text().splitlines())


def _wait_for_go(folder: str) -> None:
    go, deadline = Path(folder) / "go", time.monotonic() + DEADLINE
    while not go.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the test never let the body go")
        time.sleep(0.01)


@task
def held(folder: str) -> int:
    """Called, then blocked until the test lets it go: a kill in between re-runs it."""
    calls = _called(folder, "held")
    _wait_for_go(folder)
    return calls


@task
def quick(folder: str, name: str) -> int:
    return _called(folder, name)


def _enqueue_then_hold(ctx: Any) -> str:
    result = quick.enqueue(ctx.folder, "from-step")
    _called(ctx.folder, "step")
    _wait_for_go(ctx.folder)
    return result.id


step_flow = Flow.init("tasks-crash.step").input("folder", str).output("task_id", _enqueue_then_hold, type=str)

FLOWS = {step_flow.name: step_flow}
