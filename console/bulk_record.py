"""What a bulk operation's record keeps per execution, and a batch of writes committed with its record.

The record (`detail` of the operation's `Activity` row) holds each execution's outcome word, and for those
that did not accept, a code and why (`keep`). An operation killed mid-way must leave a record saying
exactly what it did, so where the store can join the record's transaction (the process's Django store on
the database the activity lives in: `runtime.joins_record`) a batch of cancel requests, resumes or ends and
the record naming them commit together (`write_batch`): killed before the commit, neither the writes nor
their outcomes exist; after it, both do. The next run takes up the executions the record does not name.

A write's checks (a resume's dry run, the state an end reads) run before the batch's transaction, through
the engine (`prepare`): they read and write nothing of the record. In the transaction the store checks the
row again under its lock, so a refusal found late (a claim taken meanwhile) is recorded as such.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from django.db import router, transaction
from django.utils import timezone

from flowdeck.console import activity, runtime
from flowdeck.console.models import Activity
from flowdeck.engine import errors
from flowdeck.engine.engine import FlowEngine, ResumeWrite
from flowdeck.store import spi

__all__ = ["JOINS", "Outcome", "Step", "cancel_words", "joins", "keep", "prepare", "refused", "write_batch"]

WHY_CHARS = 200

# an execution's outcome word, its code and why (both empty when it accepted), and a dry run's conflicts
Outcome = tuple[str, str, str, list[str]]
# an execution's part of a batch: its outcome decided before the transaction (a refusal), or the write to
# make in it, answering the outcome
Step = Outcome | Callable[[runtime.CallerTransaction], Outcome]

# the verbs whose writes join the record's transaction (a resume's dry run writes nothing)
JOINS = frozenset({"cancel", "resume:go", "end"})
ACCEPTED: Outcome = ("accepted", "", "", [])


def cancel_words(outcome: spi.CancelOutcome) -> Outcome:
    """A cancel request's answer as the record words it."""
    if isinstance(outcome, spi.AlreadyTerminal):
        return "already-terminal", "execution_terminal", outcome.status.show(), []
    if isinstance(outcome, spi.AlreadyRequested):
        return "already-requested", "", "", []
    return ACCEPTED


def refused(error: Exception) -> Outcome:
    """A verb's refusal (or failure) as the record words it."""
    if isinstance(error, errors.FlowResumeConflict):
        return "refused", "resume_conflict", str(error), [c.code for c in error.report.conflicts]
    if isinstance(error, errors.FlowExecutionTerminal):
        return "already-terminal", "execution_terminal", str(error), []
    word, code = activity.outcome_of(error)
    return word, code, str(error), []


def keep(detail: dict[str, Any], eid: str, outcome: Outcome) -> None:
    """Put one execution's outcome in the record."""
    word, code, text, found = outcome
    detail.setdefault("outcomes", {})[eid] = word
    if code:
        detail.setdefault("codes", {})[eid] = code
        detail.setdefault("why", {})[eid] = text[:WHY_CHARS]
    if found:
        detail.setdefault("conflict_codes", {})[eid] = found
    detail["done"] = len(detail["outcomes"])


def joins(store: spi.FlowStore) -> bool:
    """May the store's writes commit in the transaction that writes the record?"""
    return runtime.joins_record(store, router.db_for_write(Activity))


async def prepare(engine: FlowEngine, verb: str, eid: str, reason: str, actor: str) -> Step:
    """`verb`'s checks on `eid` with nothing written: a refusal's outcome, or the write to make in the
    batch's transaction."""
    try:
        match verb:
            case "cancel":
                return functools.partial(_cancel_one, eid=eid, reason=reason, actor=actor)
            case "resume:go":
                return functools.partial(_resume_one, engine, await engine.prepare_resume(eid, actor))
            case "end":
                state, status, event = await engine.prepare_end(eid, reason, actor)
                return lambda joined: _applied(engine, joined.end(eid, status, event), state)
    except (errors.FlowError, spi.FlowStoreError, ValueError) as error:
        return refused(error)
    raise ValueError(f"a {verb} does not join the record's transaction")


def write_batch(op_id: int, steps: Sequence[tuple[str, Step]], detail: dict[str, Any]) -> None:
    """Make each execution's write and write the record with their outcomes (`detail`, updated in place,
    with `beat`), in ONE transaction. Blocking: run it off the event loop."""
    with transaction.atomic(using=router.db_for_write(Activity)):
        joined = runtime.caller_transaction()
        if joined is None:  # `joins` said yes: the atomic block above is on the store's database
            raise RuntimeError("the store did not join the record's transaction")
        for eid, step in steps:
            keep(detail, eid, step if isinstance(step, tuple) else _written(joined, step))
        detail["beat"] = timezone.now().isoformat()
        Activity.objects.filter(pk=op_id).update(detail=detail, outcome="running")


def _written(
    joined: runtime.CallerTransaction, write: Callable[[runtime.CallerTransaction], Outcome]
) -> Outcome:
    try:
        return write(joined)
    except (errors.FlowError, spi.FlowStoreError) as error:  # its savepoint rolled back; the batch goes on
        return refused(error)


def _cancel_one(joined: runtime.CallerTransaction, eid: str, reason: str, actor: str) -> Outcome:
    if joined.get_execution(eid) is None:  # the store would answer an unknown id "already ended"
        raise errors.FlowExecutionNotFound(eid)
    return cancel_words(joined.request_cancel(eid, reason, actor))


def _resume_one(engine: FlowEngine, write: ResumeWrite, joined: runtime.CallerTransaction) -> Outcome:
    actor = write.event.data.get("actor")
    _applied(engine, joined.resume(write.state.execution_id, write.hash, write.event), write.state)
    transaction.on_commit(lambda: engine.resumed(write, actor), using=joined.using)  # logged once it holds
    return ACCEPTED


def _applied(engine: FlowEngine, outcome: spi.OperatorOutcome, state: spi.ExecutionState) -> Outcome:
    engine.operator_outcome(outcome, state)  # a refusal raises its typed error
    return ACCEPTED
