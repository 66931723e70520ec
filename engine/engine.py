"""`FlowEngine`: registered workflows, workers that run them, and everything an operator asks or does.

An async context manager: entering registers the flows it was given (each under its own `Flow.init`
name) and starts the workers; leaving stops them (see `WorkerPool.stop` for what happens to attempts
still running). Every read is answered from the store, so any process can watch an execution, not only the
one running it. Two surfaces hang off the engine, as in kyo-flow: `engine.workflows` (start, list,
describe, executions, diagram) and `flowdeck.engine.executions` (describe, search, history, signal, cancel,
cancel_all, diagram). The operator verbs of DESIGN.md §3 (`resume`, `answer`, `end`) and `parked`,
`register` and `health` sit on the engine itself.

Nothing is written on a refused request: every check (registered workflow, declared input, a value of
the input's type, a node that exists) runs before the one store write.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from opentelemetry.trace import TracerProvider

from flowdeck.engine import (
    arguments,
    concurrency,
    dry_run,
    errors,
    ids,
    interpreter,
    nodes,
    rate_limits,
    render,
    schema,
    tracing,
)
from flowdeck.engine.config import EngineConfig, Transient, never
from flowdeck.engine.executions import ExecutionDetail, Executions, InputStatus, SearchResult
from flowdeck.engine.flow import Flow
from flowdeck.engine.inputs import check_value as _check_value
from flowdeck.engine.inputs import declared_inputs
from flowdeck.engine.inputs import undeclared as _undeclared
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.engine.registry import Registry, Version
from flowdeck.engine.worker import Health, WorkerPool
from flowdeck.store import claim_order, deferral, spi
from flowdeck.store import concurrency as store_concurrency
from flowdeck.store.clock import SYSTEM_CLOCK, Clock

__all__ = [
    "ExecutionDetail",
    "Executions",
    "FlowEngine",
    "InputStatus",
    "ResumeWrite",
    "SearchResult",
    "Workflows",
]

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ flow inspection


_VALUELESS = (nodes.Step, nodes.Sleep)


# The stop codes a resume on the same version meets again: a mistake in the program. Others (a remote
# system that did not answer, an undo that kept failing, an unknown outcome) wait on the world.
_MISTAKES = frozenset({"F0001"})


def _repeats(state: spi.ExecutionState, to_hash: str) -> spi.Stopped | None:
    """The stop a resume onto `to_hash` would meet again (`ResumeReport.repeats`), else None."""
    status = state.status
    if not isinstance(status, spi.Stopped) or status.answered or status.code not in _MISTAKES:
        return None
    return status if state.hash == to_hash else None


def _answerable(flow: Flow, path: str) -> tuple[nodes.Node, Any]:
    """The node owning durable key `path` and the type a value recorded there has (None: undeclared)."""
    names = schema.durable_names(flow)
    owner = schema.owner_of(path, names)
    if owner is None:
        raise errors.FlowUnknownNode(path, list(names))
    node = names[owner]
    if owner == path or (isinstance(node, nodes.ForEach) and path[len(owner) + 1 :].isdigit()):
        return node, getattr(node, "type", None)
    return node, None


def new_executor_id() -> str:
    """host-pid-random: readable in an event's `executor_id`, unique per engine instance."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class ResumeWrite:
    """What a resume writes, decided with nothing written: the execution as read, the version (hash) it
    is re-pinned to, the dry run's report, and the Resumed event."""

    state: spi.ExecutionState
    hash: str
    report: dry_run.ResumeReport
    event: spi.Event


# ------------------------------------------------------------------------------------------- engine


class FlowEngine:
    """Serves registered workflows from `store`: run its workers with `async with FlowEngine(...)`.

    Knobs are those of `EngineConfig` (checked at construction, every problem listed at once). `runner`
    wraps each attempt (forward pass and unwind together), for bodies needing a context the engine does not
    set up itself. `clock` is what time means to the workers (tests pass a `ManualClock`).
    `tracer_provider`: where its OpenTelemetry spans go (default: the API's global provider, looked up at
    each start and attempt; with none configured no span is made, see `engine/tracing.py`).
    """

    def __init__(
        self,
        store: spi.FlowStore,
        flows: Iterable[Flow] = (),
        *,
        workers: int = 2,
        lease: timedelta = timedelta(seconds=30),
        renew_every: timedelta = timedelta(seconds=10),
        batch_size: int = 4,
        poll_timeout: timedelta = timedelta(seconds=30),
        shutdown_grace: timedelta = timedelta(seconds=10),
        runner: interpreter.Runner | None = None,
        clock: Clock = SYSTEM_CLOCK,
        executor_id: str | None = None,
        transient: Transient = never,
        rate_limits: Mapping[str, RateLimit] | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.config = EngineConfig(
            workers=workers,
            lease=lease,
            renew_every=renew_every,
            batch_size=batch_size,
            poll_timeout=poll_timeout,
            shutdown_grace=shutdown_grace,
            transient=transient,
            rate_limits=dict(rate_limits or {}),
        )
        self.store = store
        self.clock = clock
        self.runner = runner
        self.executor_id = executor_id or new_executor_id()
        self.tracing = tracing.Tracing(tracer_provider)
        self._flows = tuple(flows)
        self._registry = Registry()
        # the limits its nodes may use: the config's, and what `declare_rate_limits` adds (shared with the
        # pool by reference, so an attempt sees every declaration)
        self.rate_limits: dict[str, RateLimit] = dict(self.config.rate_limits)
        self._pool = WorkerPool(
            store=store,
            registry=self._registry,
            config=self.config,
            clock=clock,
            executor_id=self.executor_id,
            runner=runner,
            traces=self.tracing,
            rate_limits=self.rate_limits,
        )
        self.workflows = Workflows(self)
        self.executions = Executions(self)

    async def __aenter__(self) -> FlowEngine:
        for flow in self._flows:
            await self.register(flow.name, flow)
        self._pool.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._pool.stop()

    # -------------------------------------------------------------------------------- registration

    async def register(self, workflow_id: str, flow: Flow) -> str:
        """Check `flow` and serve it as `workflow_id`; answers its structural hash.

        The newest registration of an id is what new starts use; every registered version stays served, so
        registering an old version again makes its parked executions claimable.
        """
        info = self.serve(workflow_id, flow)
        digest = info.structural_hash
        # Served first: put_workflow wakes the pollers, and they must find the version when they look.
        await self.store.put_workflow(info)
        logger.info(
            "registered %s@%s",
            workflow_id,
            digest,
            extra={"action": "register", "workflow_id": workflow_id, "hash": digest},
        )
        return digest

    def declare_rate_limits(self, limits: Mapping[str, RateLimit]) -> None:
        """Add named rate limits its flows' nodes may use (a flows module's `RATE_LIMITS`), before serving
        the flows that use them. Declaring a name again with another definition is refused."""
        problems = [
            f"rate limit {name!r} is declared twice, differently ({self.rate_limits[name].describe()}, then "
            f"{limit.describe()})"
            for name, limit in limits.items()
            if name in self.rate_limits and self.rate_limits[name] != limit
        ]
        problems += EngineConfig(rate_limits=limits).problems()
        if problems:
            raise errors.FlowConfigError(problems)
        self.rate_limits.update(limits)

    def serve(self, workflow_id: str, flow: Flow) -> spi.WorkflowInfo:
        """`register`'s checks and its in-memory half, with no store write: answers the info `register`
        puts in the store. For a caller that must not write yet (the client inside a caller's
        transaction); `register` the same version later to record it."""
        ids.check_id(workflow_id, what="workflow id")
        schema.validate(flow)
        rate_limits.check(flow, self.rate_limits)
        self._registry.add(Version(workflow_id, schema.structural_hash(flow), flow))
        return schema.workflow_info(workflow_id, flow)

    def health(self) -> Health:
        return self._pool.health()

    def flow_of(self, state: spi.ExecutionState) -> Flow | None:
        """The definition `state` runs under when this engine serves its version; None when it does not
        (the execution is parked here)."""
        version = self._registry.resolve(state.flow_id, state.hash)
        return None if version is None else version.flow

    def answer_flow(self, state: spi.ExecutionState) -> Flow:
        """The definition an answer on `state` is judged against: its own version where served, else the
        newest (a parked execution is resumed onto it)."""
        version = self._registry.resolve(state.flow_id, state.hash) or self._registry.latest(state.flow_id)
        return version.flow

    async def parked(self, workflow_id: str) -> list[spi.ExecutionState]:
        """Executions of `workflow_id` this engine holds back: not ended, started under a version it does
        not serve. A query about this engine, never a status: registering their version recovers them."""
        orphaned = spi.ExecutionFilter.Orphaned(self._registry.hashes(workflow_id))
        return list((await self.store.list_executions(workflow_id, orphaned)).items)

    # ------------------------------------------------------------------------------ operator verbs

    async def resume(
        self, execution_id: str, *, go: bool = False, actor: str | None = None
    ) -> dry_run.ResumeReport:
        """Dry-run a stopped (or parked) execution on the newest version of its workflow and answer the
        report (kept nodes, the next node, conflicts). With `go`, re-pin it to that version so workers take
        it up, unless the report has conflicts (FlowResumeConflict carries the report). Any other execution
        (running, waiting, sleeping on a version served here) raises FlowNotResumable, dry run or not."""
        if not go:
            return (await self._resume_checked(execution_id))[2]
        write = await self.prepare_resume(execution_id, actor)
        self.operator_outcome(await self.store.resume(execution_id, write.hash, write.event), write.state)
        self.resumed(write, actor)
        return write.report

    async def prepare_resume(self, execution_id: str, actor: str | None = None) -> ResumeWrite:
        """Every check of `resume(go=True)`, with nothing written: answers the store write it makes (the
        version to re-pin to and the Resumed event), for a caller that writes it in its own transaction
        (`FlowStore.resume`, then `operator_outcome` and `resumed`). Raises what `resume` raises first."""
        state, hash, report = await self._resume_checked(execution_id)
        if report.conflicts:
            conflicts = [f"{c.code} at {c.path!r}: {c.detail}" for c in report.conflicts]
            raise errors.FlowResumeConflict(execution_id, report, conflicts)
        data = {"from_hash": state.hash, "to_hash": hash, "actor": actor}
        return ResumeWrite(state, hash, report, self._event(spi.EventKind.RESUMED, state, data))

    async def _resume_checked(
        self, execution_id: str
    ) -> tuple[spi.ExecutionState, str, dry_run.ResumeReport]:
        """The execution's state, the newest version's hash and the dry run's report on it."""
        state = await self._state(execution_id)
        if state.status.terminal:
            raise errors.FlowExecutionTerminal(execution_id, state.status.show())
        if not self._resumable(state):
            raise errors.FlowNotResumable(execution_id, state.status.show())
        newest = self._registry.latest(state.flow_id)
        report = await dry_run.dry_run(newest.flow, self.store, execution_id, clock=self.clock)
        return state, newest.hash, replace(report, repeats=_repeats(state, newest.hash))

    def resumed(self, write: ResumeWrite, actor: str | None) -> None:
        """Log a resume once its write is applied."""
        eid = write.state.execution_id
        logger.info(
            "resumed %s on %s@%s",
            eid,
            write.state.flow_id,
            write.hash,
            extra={"action": "resume", "execution_id": eid, "actor": actor},
        )

    def _resumable(self, state: spi.ExecutionState) -> bool:
        """Stopped, or parked: its version is not one this engine serves (the store cannot tell a parked
        execution from a running one; only the engine knows which versions it serves)."""
        return isinstance(state.status, spi.Stopped) or state.hash not in self._registry.hashes(state.flow_id)

    async def answer(
        self, execution_id: str, node: str, value: Any = None, *, actor: str | None = None
    ) -> None:
        """Record what node `node` (a durable path) did, for a stopped execution whose application could not
        tell; then `resume`. A step or sleep takes no value; other nodes take a value of their type."""
        state = await self._state(execution_id)
        target, declared = _answerable(self.answer_flow(state), node)
        if isinstance(target, _VALUELESS):
            if value is not None:
                raise errors.FlowInputError(
                    f"node {node!r} records no value; answer it without one", name=node
                )
            field = None
        else:
            field = _check_value(node, declared, value)
        event = self._event(spi.EventKind.ANSWERED, state, {"node": node, "actor": actor})
        self.operator_outcome(await self.store.answer(execution_id, node, field, event), state, node)

    async def end(self, execution_id: str, reason: str, *, actor: str | None = None) -> None:
        """End the execution Failed(reason, kind="Ended") with no undos: a person put the world right."""
        state, status, event = await self.prepare_end(execution_id, reason, actor)
        self.operator_outcome(await self.store.end(execution_id, status, event), state)

    async def prepare_end(
        self, execution_id: str, reason: str, actor: str | None = None
    ) -> tuple[spi.ExecutionState, spi.Failed, spi.Event]:
        """`end`'s checks with nothing written: the state read, and the status and Ended event the store's
        `end` takes (then `operator_outcome`), for a caller that writes them in its own transaction."""
        state = await self._state(execution_id)
        event = self._event(spi.EventKind.ENDED, state, {"reason": reason, "actor": actor})
        return state, spi.Failed(reason, "Ended"), event

    def operator_outcome(
        self, outcome: spi.OperatorOutcome, state: spi.ExecutionState, node: str = ""
    ) -> None:
        """The store's answer to an operator write on `state`'s execution: nothing when applied, else the
        refusal as its typed exception."""
        eid = state.execution_id
        match outcome:
            case spi.OperatorOutcome.APPLIED:
                return
            case spi.OperatorOutcome.ALREADY_RECORDED:
                raise errors.FlowAlreadyAnswered(eid, node)
            case spi.OperatorOutcome.NOT_STOPPED:
                raise errors.FlowNotStopped(eid, state.status.show())
            case spi.OperatorOutcome.CLAIM_HELD:
                raise errors.FlowClaimHeld(eid, state.executor)
            case spi.OperatorOutcome.ALREADY_TERMINAL:
                raise errors.FlowExecutionTerminal(eid, state.status.show())
            case spi.OperatorOutcome.NOT_FOUND:
                raise errors.FlowExecutionNotFound(eid)

    # ---------------------------------------------------------------------------------- helpers

    async def _state(self, execution_id: str) -> spi.ExecutionState:
        state = await self.store.get_execution(execution_id)
        if state is None:
            raise errors.FlowExecutionNotFound(execution_id)
        return state

    def _event(self, kind: spi.EventKind, state: spi.ExecutionState, data: Mapping[str, Any]) -> spi.Event:
        return spi.Event(kind, state.flow_id, state.execution_id, self.clock.now(), dict(data))

    def _version_of(self, state: spi.ExecutionState) -> Version:
        version = self._registry.resolve(state.flow_id, state.hash)
        if version is None:
            raise errors.FlowNotRegistered(f"{state.flow_id}@{state.hash}", self._registry.ids())
        return version


# ------------------------------------------------------------------------------------------ surfaces


class Workflows:
    """`engine.workflows`: what is registered, and starting executions of it."""

    def __init__(self, engine: FlowEngine) -> None:
        self._engine = engine

    async def start(
        self,
        workflow_id: str,
        *,
        execution_id: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        run_here: bool = False,
        priority: int | None = None,
        run_after: datetime | None = None,
    ) -> str:
        """Start an execution of the newest version of `workflow_id`, with `inputs` seeded as delivered;
        answers its id (a random one unless given). Every input is checked before anything is written.

        `priority`: from -100 to 100, higher claimed first (`store.claim_order`, which also says how the
        lower ones are kept from starving); the workflow's `Meta.priority` when None. `run_after`: a
        timezone-aware instant before which no worker runs it (`store.deferral`; one not in the future
        defers nothing); a deferred start is never run here.

        `run_here`: when this engine's workers are running (inside `async with engine`, on its event
        loop), the execution is created already claimed by this engine, in the same one store write, and
        its first attempt starts at once in this process, with no poll and no read (DBOS's local
        `start_workflow`). When the flow begins with a step or an output (neither atomic nor at-most-once),
        that write also records the attempt's claim and the first node's start, so its body runs with no
        commit of its own before it. Nothing is weakened: the claim is an ordinary lease, renewed while
        the attempt runs; if this process dies, it lapses and any engine's workers take the execution up
        (a first node recorded started and never finished runs again, as after any crash mid-body). Without
        running workers (an API or console process) the start is the plain one, and the workers elsewhere
        pick the execution up as usual. Either way the call returns once the row is written."""
        engine = self._engine
        with engine.tracing.starting("StartFlow", workflow_id, {tracing.WORKFLOW_ID: workflow_id}) as started:
            eid, version, created, fields = self.prepare_start(
                workflow_id, execution_id, inputs, priority, carrier=started.carrier(), run_after=run_after
            )
            started.execution(eid)
            # a limited execution is claimed by the claim only, where the store counts its slots
            here = (
                run_here
                and engine._pool.running
                and deferral.not_before_of(created.data) is None
                and version.flow.meta.concurrency is None
            )
            if here:
                await self._start_here(eid, version, created, fields)
            elif not await engine.store.create_execution_if_absent(
                eid, workflow_id, version.hash, spi.Running(), created, fields
            ):
                raise errors.FlowDuplicateExecution(eid)
        logger.info(
            "started %s of %s@%s%s",
            eid,
            workflow_id,
            version.hash,
            " here" if here else "",
            extra={"action": "start", "execution_id": eid, "workflow_id": workflow_id, "here": here},
        )
        return eid

    def prepare_start(
        self,
        workflow_id: str,
        execution_id: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        priority: int | None = None,
        *,
        carrier: Mapping[str, str] | None = None,
        run_after: datetime | None = None,
    ) -> tuple[str, Version, spi.Event, dict[str, spi.FieldData]]:
        """Every check of `start`, with nothing written: the execution id (a random one unless given),
        the newest version, the Created event and the encoded seed fields, as the one store write of a
        start takes them. Raises what `start` raises before writing. `carrier`: the start span's trace
        context (`tracing.Started.carrier`), kept in the Created event's payload for every attempt."""
        if execution_id is not None:
            ids.check_id(execution_id)
        if priority is not None:
            arguments.priority(priority)
        if run_after is not None:
            arguments.run_after(run_after)
        version = self._engine._registry.latest(workflow_id)
        fields: dict[str, spi.FieldData] = {}
        if inputs:  # the flow's inputs are walked only when some are handed in
            declared = declared_inputs(version.flow)
            for name, value in inputs.items():
                if name not in declared:
                    raise _undeclared(name, declared)
                fields[name] = _check_value(name, declared[name].type, value)
        eid = execution_id or uuid.uuid4().hex
        chosen = version.flow.meta.priority if priority is None else priority
        now = self._engine.clock.now()
        deferred = run_after if run_after is not None and run_after > now else None
        limits = concurrency.limits_for(version.flow.meta.concurrency, fields)
        data = deferral.with_not_before(
            tracing.carried(
                claim_order.event_data(chosen) | store_concurrency.event_data(limits), carrier or {}
            ),
            deferred,
        )
        created = spi.Event(spi.EventKind.CREATED, workflow_id, eid, now, data)
        return eid, version, created, fields

    async def _start_here(
        self, eid: str, version: Version, created: spi.Event, fields: Mapping[str, spi.FieldData]
    ) -> None:
        """Create the execution claimed by this engine and hand the claim to its workers. When the first
        attempt's first write is known already (the claim and the first node's start, `interpreter.opening`)
        it goes with the row: one commit fewer before the first body runs."""
        engine = self._engine
        opening = interpreter.opening(version.flow, eid, engine.clock, engine.executor_id)
        claimed = await engine.store.create_claimed_if_absent(
            eid,
            version.workflow_id,
            version.hash,
            spi.Running(),
            created,
            fields,
            executor_id=engine.executor_id,
            lease=engine.config.lease,
            following=opening.events if opening is not None else (),
        )
        if claimed is None:
            raise errors.FlowDuplicateExecution(eid)
        if not engine._pool.adopt(claimed, opening.path if opening is not None else None):
            # The workers began stopping during the write: hand the claim back at once (the execution is
            # offered to every poll) rather than leave it to lapse after a lease.
            await claimed.finish(spi.Suspended(frozenset()))

    async def list(self) -> list[spi.WorkflowInfo]:
        return list(await self._engine.store.list_workflows())

    async def describe(self, workflow_id: str) -> spi.WorkflowInfo:
        info = await self._engine.store.get_workflow(workflow_id)
        if info is None:
            raise errors.FlowNotRegistered(workflow_id, self._engine._registry.ids())
        return info

    async def executions(self, workflow_id: str) -> list[spi.ExecutionState]:
        """Every execution of the workflow, whatever its status, newest first."""
        return list((await self._engine.store.list_executions(workflow_id)).items)

    async def diagram(self, workflow_id: str, format: str = "mermaid") -> str:
        """The newest registered version's structure, drawn in `format`."""
        return render.render(self._engine._registry.latest(workflow_id).flow, format)
