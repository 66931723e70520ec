"""The replay interpreter: one attempt at an execution, replaying the plan and skipping what is recorded.

An attempt reads the record (fields and history) once, then walks the flow's nodes from the start. A node
whose record it finds is skipped and its value read back (its compensations noted again); the first node
without one runs, and is recorded before the next begins. Recording a node is ONE store write, and it is
the write that starts the next node: before a body runs, one write carries the previous node's record
(value, undo notes, completion: `Recorder.deferred`), the events pending since (the attempt's
ExecutionClaimed, a consumed input, a woken sleep) and this node's StepStarted. So a start is durable before
its body, and the cancel flag that same write answers (`Claimed.cancel_requested`, refreshed by every
accepted write, so the check costs no read) decides whether the body runs: a node whose start is recorded
after a cancel request never runs. The last record lands just before the attempt's end (a step's, which is
only events, with it); the store refuses the Completed ending while a request is outstanding (I2), and the
attempt then unwinds and ends Cancelled. The record may come with the claim (`Claimed.prefetched_ledger`).

How an attempt ends (`run_attempt` answers an `AttemptReport`):

* the walk reaches the end → Terminal(Completed), or, when the store refuses it for a cancel request that
  landed meanwhile, the unwind → Cancelled(reason);
* a wait (input, sleep, a long retry back-off) → `Parked(paths)` → Suspended(paths), holding nothing;
* a `FlowDomainError` or a cancellation → the unwind (engine/compensation.py) → Failed(error, kind) or
  Cancelled(reason);
* the world not answering past the node's schedule → Stop(F0003); a mistake → Stop(F0001), nothing undone;
  an at-most-once node found started but unfinished → Stop(F0004);
* a lost claim, a store failure, or the task being cancelled → nothing more is written.

The parts live in modules of their own: the walk over the nodes (engine/walker.py), the record it reads and
adds to (engine/recorder.py), a body's call, timeout and retries (engine/bodies.py), a fork's branches side
by side (engine/forks.py), the signals and report an attempt ends with (engine/outcomes.py, whose names are
importable from here), and the unwind (engine/compensation.py). This module runs one attempt with them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from flowdeck.engine import compensation, nodes, recorder, tracing, traversal, values
from flowdeck.engine.config import Transient, never
from flowdeck.engine.errors import (
    FlowCancelled,
    FlowDomainError,
    FlowLoopExhausted,
    FlowNondeterministicCollection,
)
from flowdeck.engine.flow import Flow
from flowdeck.engine.outcomes import (
    AttemptReport,
    ClaimLost,
    Halt,
    Parked,
    Question,
    ResumedUnwind,
    StopFor,
    mistake,
)
from flowdeck.engine.rate_limits import RateLimit, Tokens
from flowdeck.engine.traversal import qualify
from flowdeck.engine.walker import Scope, Walker, list_type
from flowdeck.engine.walker import child_inputs as child_inputs  # the inputs a subflow's mapper supplies
from flowdeck.store import spi
from flowdeck.store.clock import Clock

__all__ = [
    "AttemptReport",
    "ClaimLost",
    "Halt",
    "Opening",
    "Parked",
    "Question",
    "StopFor",
    "assemble_record",
    "opening",
    "qualify",
    "run_attempt",
]

Runner = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""`await runner(walk)` wraps an attempt's walk (forward pass and unwind together), for bodies needing a
context the engine does not set up itself; it must await `walk()` and hand back its answer."""


# ------------------------------------------------------------------------------------- the attempt


@dataclasses.dataclass(frozen=True)
class Opening:
    """The first write of the first attempt at a new execution, known before the execution exists: the
    claim (ExecutionClaimed, ExecutionResumed) and the start of `path`, the flow's first node."""

    path: str
    events: tuple[spi.Event, ...]


def opening(flow: Flow, execution_id: str, clock: Clock, executor_id: str) -> Opening | None:
    """The first attempt's first write, when it is exactly the claim and the first node's start: the flow
    begins with a step or an output that is neither atomic (its start rides on its own transaction) nor
    at-most-once (found started and never finished, it stops the execution for a person, so its start is
    written at the last moment before its body). A start that runs here writes it with the row
    (`create_claimed_if_absent(following=...)`), one commit fewer; the attempt then starts that node's body
    without a write (`run_attempt(opened=...)`). None for any other first node."""
    first = flow.nodes[0] if flow.nodes else None
    if not isinstance(first, (nodes.Step, nodes.Output)) or first.knobs.atomic or first.knobs.at_most_once:
        return None
    if first.knobs.rate_limit is not None:  # its token is taken before its start is written
        return None
    at = clock.now()

    def event(kind: spi.EventKind, **data: Any) -> spi.Event:
        return spi.Event(kind, flow.name, execution_id, at, data)

    started = event(spi.EventKind.STEP_STARTED, step_name=first.name, executor_id=executor_id)
    return Opening(first.name, (*_claim_events(event, executor_id), started))


def _claim_events(event: Callable[..., spi.Event], executor_id: str) -> list[spi.Event]:
    """What every attempt records first: ExecutionClaimed and ExecutionResumed, made by `event`."""
    return [
        event(spi.EventKind.EXECUTION_CLAIMED, executor_id=executor_id),
        event(spi.EventKind.EXECUTION_RESUMED, executor_id=executor_id),
    ]


async def run_attempt(
    flow: Flow,
    claimed: spi.Claimed,
    *,
    store: spi.FlowStore,
    clock: Clock,
    executor_id: str,
    runner: Runner | None = None,
    opened: str | None = None,
    transient: Transient = never,
    traces: tracing.Tracing | None = None,
    rate_limits: Mapping[str, RateLimit] | None = None,
) -> AttemptReport:
    """Perform one whole attempt at a claimed execution, ending it with `claimed.finish(...)`.

    Writes ExecutionClaimed and ExecutionResumed (with the first write, not on their own), replays the
    flow, and ends Terminal / Suspended / Stop. A FlowStoreError propagates with nothing decided; so does
    asyncio.CancelledError (the worker cancels the task when its claim is lost). `opened`: the claim's own
    write recorded those and the start of the node at this path (`opening`), so the attempt writes none of
    them. `transient`: a body's exception the world caused, retried rather than taken for a mistake
    (`EngineConfig.transient`). `traces`: where the attempt's spans go (None: none are made).
    `rate_limits`: the limits its nodes take tokens of (`EngineConfig.rate_limits`).
    """
    state = claimed.state
    eid = state.execution_id
    if state.status.terminal or isinstance(state.status, spi.Stopped):
        return AttemptReport(eid, "no-work", state.status.show())
    began = time.time_ns()  # the attempt's span begins with the record's read
    ledger = await claimed.prefetched_ledger()
    if ledger is None:  # the record is read once per attempt, here
        ledger = (await store.get_all_fields(eid), (await store.get_history(eid)).events)
    fields, history = ledger
    rec = recorder.RealRecorder(
        flow,
        claimed,
        execution_id=eid,
        status=state.status,
        fields=fields,
        history=history,
        clock=clock,
        executor_id=executor_id,
        waits=state.waits,
        satisfied=claimed.satisfied,
    )
    if opened is None:
        rec.pending += _claim_events(rec.event, executor_id)
    rec.opened = opened
    rec.transient = transient
    if rate_limits:
        rec.tokens = Tokens(rate_limits, store.take_token)
    untraced = traces or tracing.UNTRACED
    trace = untraced.attempt(state, history, executor_id, opened=opened is not None, began=began)
    return await _traced(Walker(flow, rec, trace), rec, trace, runner)


async def _traced(
    run: Walker, rec: recorder.RealRecorder, trace: tracing.Attempt, runner: Runner | None
) -> AttemptReport:
    """The walk and the ending under the attempt's span (current while they run), ended with the report."""
    eid = rec.execution_id
    token = trace.enter()
    try:
        ended = await (runner(lambda: _end(run, rec)) if runner is not None else _end(run, rec))
        report = _report(eid, *ended)
    except ClaimLost as lost:
        report = AttemptReport(eid, "claim-lost", str(lost))
    except BaseException as error:
        trace.fail(error)
        raise
    finally:
        trace.leave(token)
    trace.end(report, ended[0] if report.outcome != "claim-lost" else None)
    return report


async def _end(run: Walker, rec: recorder.RealRecorder) -> tuple[spi.ClaimOutcome, spi.StatusOutcome]:
    """Walk, then end the attempt with the verdict. The store refuses a Completed ending while a cancel
    request is outstanding (decided in the ending's own write): one that landed after the last node's
    start is heard there, and the attempt unwinds as Compensating(Cancellation) and ends Cancelled."""
    outcome = await _verdict(run, rec)
    answer = await rec.finish(outcome)
    if answer is spi.StatusOutcome.CANCEL_REQUESTED:
        outcome = await _unwind(run, rec, spi.Cancellation(rec.claimed.cancel_reason))
        answer = await rec.finish(outcome)
    return outcome, answer


async def _verdict(run: Walker, rec: recorder.RealRecorder) -> spi.ClaimOutcome:
    """Walk the flow and classify how the walk ended (spec §5.7, DESIGN §3)."""
    try:
        await run.walk(run.flow.nodes, Scope(""))
        if rec.resume_cause is not None:  # the walk reached the end: the unwind is still forced
            raise ResumedUnwind(rec.resume_cause)
        return spi.Terminal(spi.Completed(), rec.event(spi.EventKind.COMPLETED))
    except Parked as parked:
        return spi.Suspended(parked.paths)
    except StopFor as stop:
        return _stop(rec, stop)
    except (
        ResumedUnwind,
        FlowCancelled,
        FlowDomainError,
        FlowLoopExhausted,
        FlowNondeterministicCollection,
    ) as error:
        return await _unwind(
            run, rec, rec.resume_cause or _cause(error)
        )  # a resumed unwind keeps its verdict
    except (ClaimLost, spi.FlowStoreError):
        raise
    except Exception as error:  # a flaw outside any node's body: still a mistake for a person, not a crash
        return _stop(rec, mistake("", error))


async def _unwind(run: Walker, rec: recorder.RealRecorder, cause: spi.Cause) -> spi.ClaimOutcome:
    """The unwind, a span of its own in the attempt's trace (its compensations' spans under it)."""
    with run.trace.unwinding(cause) as unwinding:
        try:
            return unwinding.ended(await compensation.unwind(rec, run.runner, run.handlers, cause))
        except Parked as parked:  # a compensation's retry waits in a durable row; the unwind resumes later
            return unwinding.ended(spi.Suspended(parked.paths))
        except StopFor as stop:
            return unwinding.ended(_stop(rec, stop))


def _stop(rec: recorder.RealRecorder, stop: StopFor) -> spi.Stop:
    stopped = stop.stopped
    if (
        rec.resume_cause is not None and stopped.cause is None
    ):  # stopped inside an unwind: resume continues it
        stopped = dataclasses.replace(stopped, cause=rec.resume_cause)
    event = rec.event(spi.EventKind.STOPPED, code=stopped.code, node=stopped.node, reason=stopped.reason)
    return spi.Stop(stopped, event)


def _cause(error: BaseException) -> spi.Cause:
    if isinstance(error, ResumedUnwind):
        return error.cause
    if isinstance(error, FlowCancelled):
        return spi.Cancellation(error.reason)
    return spi.Failure(str(error), type(error).__name__)


_OUTCOME_NAMES: dict[type, str] = {
    spi.Completed: "completed",
    spi.Failed: "failed",
    spi.Cancelled: "cancelled",
}


def _report(eid: str, outcome: spi.ClaimOutcome, answer: spi.StatusOutcome) -> AttemptReport:
    if answer is spi.StatusOutcome.CLAIM_LOST:
        return AttemptReport(eid, "claim-lost", "the claim lapsed before the attempt could end")
    if answer in (spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL, spi.StatusOutcome.CANCEL_REQUESTED):
        return AttemptReport(eid, "no-work", "the execution ended under this attempt")
    match outcome:
        case spi.Terminal(status, _):
            detail = status.show() if not isinstance(status, spi.Failed) else f"{status.kind}: {status.error}"
            return AttemptReport(eid, _OUTCOME_NAMES[type(status)], detail)
        case spi.Suspended(paths):
            return AttemptReport(eid, "suspended", ", ".join(sorted(paths)))
        case spi.Stop(stopped, _):
            return AttemptReport(eid, "stopped", f"{stopped.code} at {stopped.node}: {stopped.reason}")
    raise TypeError(f"not an outcome: {outcome!r}")


# ------------------------------------------------------------------------------------------ records


def assemble_record(flow: Flow, fields: Mapping[str, spi.FieldData]) -> values.Record:
    """The record of a finished (or partial) execution, as `run_local` answers it: every valued node by
    name, a subflow's record nested under the subflow's name."""
    return values.Record(_assemble(flow, "", fields))


def _assemble(flow: Flow, prefix: str, fields: Mapping[str, spi.FieldData]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for place in traversal.walk(flow, prefix, subflows=False):
        node = place.node
        match node:
            case nodes.Subflow():
                record[node.name] = values.Record(_assemble(node.child, place.path, fields))
                continue
            case nodes.Step():
                continue
            case nodes.ForEach():
                declared = list_type(node.type)
            case nodes.Sleep():
                declared = None
            case _:
                declared = node.type
        data = fields.get(place.path)
        if data is not None:
            record[node.name] = values.decode(data, declared)
    return record
