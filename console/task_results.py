"""A task's execution read back as Django's `TaskResult`: Flowdeck's states mapped onto READY, RUNNING,
SUCCESSFUL and FAILED.

Running under a live claim is RUNNING; running and unclaimed (just enqueued, or parked on a retry's
back-off) is READY, ready to be run again. Completed is SUCCESSFUL with the recorded `return_value`.
Failed (the task raised), Cancelled and Stopped (a stop code: the retries ran out) are FAILED, each with one
`TaskError`; a stopped execution an operator resumes is read again as what it then is. `worker_ids` holds
one executor id per claim (`ExecutionClaimed`), the timestamps come from the same history (`enqueued_at`
the Created event's, which `enqueue` answered: a result read back before a worker took it equals the
enqueue's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from flowdeck.console import django_tasks, task_flows
from flowdeck.store import spi

__all__ = ["result_of"]

Status = django_tasks.TaskResultStatus


def result_of(
    task: Any,
    alias: str,
    state: spi.ExecutionState,
    fields: Mapping[str, spi.FieldData],
    events: Sequence[spi.Event],
    now: datetime,
) -> Any:
    """The `TaskResult` of `task`'s execution `state`, with its recorded fields and history."""
    claims = [event for event in events if event.kind is spi.EventKind.EXECUTION_CLAIMED]
    # the Created event's time, as `enqueue` answered it (the row's own stamp is a few microseconds later)
    created = next(
        (event.timestamp for event in events if event.kind is spi.EventKind.CREATED), state.created
    )
    status = _status(state, now)
    ended = status in (Status.SUCCESSFUL, Status.FAILED)
    result = django_tasks.TaskResult(
        task=task,
        id=state.execution_id,
        status=status,
        enqueued_at=created,
        started_at=claims[0].timestamp if claims else None,
        finished_at=state.updated if ended else None,
        last_attempted_at=claims[-1].timestamp if claims else None,
        args=_decoded(fields, "args", []),
        kwargs=_decoded(fields, "kwargs", {}),
        backend=alias,
        errors=_errors(state.status),
        worker_ids=[str(event.data.get("executor_id", "")) for event in claims],
    )
    if status is Status.SUCCESSFUL:
        object.__setattr__(result, "_return_value", _decoded(fields, task_flows.RETURN_VALUE, None))
    return result


def _status(state: spi.ExecutionState, now: datetime) -> Any:
    match state.status:
        case spi.Completed():
            return Status.SUCCESSFUL
        case spi.Failed() | spi.Cancelled() | spi.Stopped():
            return Status.FAILED
    claimed = state.executor is not None and state.claim_expiry is not None and state.claim_expiry > now
    return Status.RUNNING if claimed else Status.READY


def _decoded(fields: Mapping[str, spi.FieldData], name: str, default: Any) -> Any:
    field = fields.get(name)
    return default if field is None else json.loads(field.value)


def _errors(status: spi.Status) -> list[Any]:
    """One `TaskError` for an execution that ended without completing, none otherwise."""
    match status:
        case spi.Failed(error=error, kind="TaskFailed"):
            path, _, trace = error.partition("\n")
            return [django_tasks.TaskError(exception_class_path=path, traceback=trace)]
        case spi.Failed(error=error, kind=kind):
            return [_flowdeck_error(f"{kind or 'Failed'}: {error}", "TaskFailed")]
        case spi.Cancelled(reason=reason):
            return [_flowdeck_error(f"cancelled: {reason}" if reason else "cancelled", "TaskCancelled")]
        case spi.Stopped(code=code, reason=reason, detail=detail):
            return [_flowdeck_error(f"{code}: {reason}\n{detail}".rstrip(), "TaskStopped")]
    return []


def _flowdeck_error(text: str, name: str) -> Any:
    return django_tasks.TaskError(exception_class_path=f"{task_flows.__name__}.{name}", traceback=text)
