"""`FlowEngine`: registered workflows, workers that run them, and everything an operator asks or does.

An async context manager: entering registers the flows it was given (each under its own `Flow.init`
name) and starts the workers; leaving stops them (see `WorkerPool.stop` for what happens to attempts
still running). Every read is answered from the store, so any process can watch an execution, not only the
one running it. Two surfaces hang off the engine, as in kyo-flow: `engine.workflows` (start, list,
describe, executions, diagram) and `engine.executions` (describe, search, history, signal, cancel,
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine import dry_run, errors, ids, interpreter, nodes, progress, render, schema, values
from engine.config import EngineConfig
from engine.flow import Flow
from engine.inputs import check_value as _check_value
from engine.inputs import declared_inputs
from engine.inputs import undeclared as _undeclared
from engine.registry import Registry, Version
from engine.worker import Health, WorkerPool
from store import spi
from store.clock import SYSTEM_CLOCK, Clock

__all__ = ["ExecutionDetail", "Executions", "FlowEngine", "InputStatus", "SearchResult", "Workflows"]

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class InputStatus:
    """One declared input of an execution's flow: its type's tag and JSON schema, and whether it arrived."""

    name: str
    tag: str
    delivered: bool
    json_schema: Mapping[str, Any]


@dataclass(frozen=True)
class ExecutionDetail:
    """An execution's row, with what its definition lets us say about it.

    `inputs` and `progress` need the definition the execution started under: when this engine does not
    serve that version they are empty (`progress` None) beside a real row.
    """

    state: spi.ExecutionState
    inputs: tuple[InputStatus, ...] = ()
    progress: Any = None

    @property
    def execution_id(self) -> str:
        return self.state.execution_id

    @property
    def flow_id(self) -> str:
        return self.state.flow_id

    @property
    def status(self) -> spi.Status:
        return self.state.status

    @property
    def waits(self) -> Mapping[str, spi.Wake]:
        return self.state.waits

    @property
    def cancel_requested(self) -> bool:
        return self.state.cancel_requested

    @property
    def stop(self) -> spi.Stopped | None:
        """Why it stopped for a person (code, node, reason, detail), or None when it is not stopped."""
        status = self.state.status
        return status if isinstance(status, spi.Stopped) else None


@dataclass(frozen=True)
class SearchResult:
    """A page of matches, newest created first; `total` counts every match, not the page."""

    items: tuple[spi.ExecutionState, ...]
    total: int


# ------------------------------------------------------------------------------------ flow inspection


_VALUELESS = (nodes.Step, nodes.Sleep)


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


# ------------------------------------------------------------------------------------------- engine


class FlowEngine:
    """Serves registered workflows from `store`: run its workers with `async with FlowEngine(...)`.

    Knobs are those of `EngineConfig` (checked at construction, every problem listed at once). `runner`
    wraps each attempt (forward pass and unwind together), for bodies needing a context the engine does not
    set up itself. `clock` is what time means to the workers (tests pass a `ManualClock`).
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
    ) -> None:
        self.config = EngineConfig(
            workers=workers,
            lease=lease,
            renew_every=renew_every,
            batch_size=batch_size,
            poll_timeout=poll_timeout,
            shutdown_grace=shutdown_grace,
        )
        self.store = store
        self.clock = clock
        self.runner = runner
        self.executor_id = executor_id or new_executor_id()
        self._flows = tuple(flows)
        self._registry = Registry()
        self._pool = WorkerPool(
            store=store,
            registry=self._registry,
            config=self.config,
            clock=clock,
            executor_id=self.executor_id,
            runner=runner,
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

    def serve(self, workflow_id: str, flow: Flow) -> spi.WorkflowInfo:
        """`register`'s checks and its in-memory half, with no store write: answers the info `register`
        puts in the store. For a caller that must not write yet (the client inside a caller's
        transaction); `register` the same version later to record it."""
        ids.check_id(workflow_id, what="workflow id")
        schema.validate(flow)
        self._registry.add(Version(workflow_id, schema.structural_hash(flow), flow))
        return schema.workflow_info(workflow_id, flow)

    def health(self) -> Health:
        return self._pool.health()

    def flow_of(self, state: spi.ExecutionState) -> Flow | None:
        """The definition `state` runs under when this engine serves its version; None when it does not
        (the execution is parked here)."""
        version = self._registry.resolve(state.flow_id, state.hash)
        return None if version is None else version.flow

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
        it up, unless the report has conflicts (FlowResumeConflict carries the report)."""
        state = await self._state(execution_id)
        if state.status.terminal:
            raise errors.FlowExecutionTerminal(execution_id, state.status.show())
        newest = self._registry.latest(state.flow_id)
        report = await dry_run.dry_run(newest.flow, self.store, execution_id, clock=self.clock)
        if not go:
            return report
        if report.conflicts:
            conflicts = [f"{c.code} at {c.path!r}: {c.detail}" for c in report.conflicts]
            raise errors.FlowResumeConflict(execution_id, report, conflicts)
        event = self._event(
            spi.EventKind.RESUMED, state, {"from_hash": state.hash, "to_hash": newest.hash, "actor": actor}
        )
        self._operator_outcome(await self.store.resume(execution_id, newest.hash, event), state)
        logger.info(
            "resumed %s on %s@%s",
            execution_id,
            state.flow_id,
            newest.hash,
            extra={"action": "resume", "execution_id": execution_id, "actor": actor},
        )
        return report

    async def answer(
        self, execution_id: str, node: str, value: Any = None, *, actor: str | None = None
    ) -> None:
        """Record what node `node` (a durable path) did, for a stopped execution whose application could not
        tell; then `resume`. A step or sleep takes no value; other nodes take a value of their type."""
        state = await self._state(execution_id)
        version = self._registry.resolve(state.flow_id, state.hash) or self._registry.latest(state.flow_id)
        target, declared = _answerable(version.flow, node)
        if isinstance(target, _VALUELESS):
            if value is not None:
                raise errors.FlowInputError(
                    f"node {node!r} records no value; answer it without one", name=node
                )
            field = None
        else:
            field = _check_value(node, declared, value)
        event = self._event(spi.EventKind.ANSWERED, state, {"node": node, "actor": actor})
        self._operator_outcome(await self.store.answer(execution_id, node, field, event), state, node)

    async def end(self, execution_id: str, reason: str, *, actor: str | None = None) -> None:
        """End the execution Failed(reason, kind="Ended") with no undos: a person put the world right."""
        state = await self._state(execution_id)
        event = self._event(spi.EventKind.ENDED, state, {"reason": reason, "actor": actor})
        outcome = await self.store.end(execution_id, spi.Failed(reason, "Ended"), event)
        self._operator_outcome(outcome, state)

    def _operator_outcome(
        self, outcome: spi.OperatorOutcome, state: spi.ExecutionState, node: str = ""
    ) -> None:
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
    ) -> str:
        """Start an execution of the newest version of `workflow_id`, with `inputs` seeded as delivered;
        answers its id (a random one unless given). Every input is checked before anything is written.

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
        eid, version, created, fields = self.prepare_start(workflow_id, execution_id, inputs)
        here = run_here and engine._pool.running
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
        self, workflow_id: str, execution_id: str | None = None, inputs: Mapping[str, Any] | None = None
    ) -> tuple[str, Version, spi.Event, dict[str, spi.FieldData]]:
        """Every check of `start`, with nothing written: the execution id (a random one unless given),
        the newest version, the Created event and the encoded seed fields, as the one store write of a
        start takes them. Raises what `start` raises before writing."""
        if execution_id is not None:
            ids.check_id(execution_id)
        version = self._engine._registry.latest(workflow_id)
        fields: dict[str, spi.FieldData] = {}
        if inputs:  # the flow's inputs are walked only when some are handed in
            declared = declared_inputs(version.flow)
            for name, value in inputs.items():
                if name not in declared:
                    raise _undeclared(name, declared)
                fields[name] = _check_value(name, declared[name].type, value)
        eid = execution_id or uuid.uuid4().hex
        created = spi.Event(spi.EventKind.CREATED, workflow_id, eid, self._engine.clock.now(), {})
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


class Executions:
    """`engine.executions`: watching and steering individual executions."""

    def __init__(self, engine: FlowEngine) -> None:
        self._engine = engine

    async def describe(self, execution_id: str) -> ExecutionDetail:
        engine = self._engine
        state = await engine._state(execution_id)
        version = engine._registry.resolve(state.flow_id, state.hash)
        if version is None:
            return ExecutionDetail(state)
        fields = await engine.store.get_all_fields(execution_id)
        history = (await engine.store.get_history(execution_id)).events
        inputs = tuple(
            InputStatus(name, values.type_tag(node.type), name in fields, values.json_schema(node.type))
            for name, node in declared_inputs(version.flow).items()
        )
        return ExecutionDetail(state, inputs, progress.build_progress(version.flow, state, fields, history))

    async def search(
        self,
        workflow_id: str | None = None,
        status: str | spi.ExecutionFilter.Any | None = None,
        limit: int = 25,
        offset: int = 0,
        id_prefix: str | None = None,
        where: Sequence[str | spi.FieldMatch] = (),
        *,
        order_by: str = "created",
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
    ) -> SearchResult:
        """Executions matching the filter (a wire word such as "waiting:approval", or a filter value),
        every `where` term (`field:order.customer=ada`, or its parsed `spi.FieldMatch`), the creation window
        (`created_after <= created < created_before`) and the last-change window (`updated_after <= updated
        < updated_before`), newest first by `order_by` ("created" or "updated"). A word naming no filter,
        a term that is not one, or another order raises `spi.FilterParseError` (a ValueError)."""
        if offset < 0:
            raise spi.FilterParseError(f"offset must not be negative (got {offset})")
        if order_by not in spi.ORDER_BY:
            raise spi.FilterParseError(
                f"order_by must be one of {', '.join(spi.ORDER_BY)} (got {order_by!r})"
            )
        filt = spi.ExecutionFilter.parse(status) if isinstance(status, str) else status
        fields = [spi.parse_field_term(t) if isinstance(t, str) else t for t in where]
        page = await self._engine.store.list_executions(
            workflow_id,
            filt,
            limit,
            offset,
            id_prefix,
            fields,
            order_by=order_by,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
        )
        return SearchResult(tuple(page.items), page.total)

    async def history(self, execution_id: str, limit: int | None = 50, offset: int = 0) -> spi.HistoryPage:
        return await self._engine.store.get_history(execution_id, limit, offset)

    async def signal(self, execution_id: str, name: str, value: Any) -> None:
        """Deliver input `name`. Refused, with nothing written: an unknown execution, an ended one, an
        undeclared input (naming the declared ones), a value failing the input's type (pydantic's message),
        an input already delivered.

        When this engine's workers are running (inside `async with engine`, on its event loop) and the input
        makes the execution ready, the delivery also claims it for this engine and its next attempt starts
        at once here (as `workflows.start(..., run_here=True)` does for a start). Otherwise the delivery is
        the plain one, and whichever workers poll for the execution continue it."""
        engine = self._engine
        state = await engine.store.get_execution(execution_id)
        field, event = self.prepare_signal(execution_id, state, name, value)
        # The version resolved above is registered here, so this engine's workers serve it.
        if engine._pool.running:
            outcome = await self._deliver_here(execution_id, name, field, event)
        else:
            outcome = await engine.store.signal(execution_id, name, field, event)
        self.signal_outcome(execution_id, name, outcome)

    def prepare_signal(
        self, execution_id: str, state: spi.ExecutionState | None, name: str, value: Any
    ) -> tuple[spi.FieldData, spi.Event]:
        """Every check of `signal` against the execution's row `state` (None: there is none), with nothing
        written: the encoded field and its InputReceived event."""
        if state is None:
            raise errors.FlowExecutionNotFound(execution_id)
        if state.status.terminal:
            raise errors.FlowExecutionTerminal(state.execution_id, state.status.show())
        declared = declared_inputs(self._engine._version_of(state).flow)
        if name not in declared:
            raise _undeclared(name, declared)
        field = _check_value(name, declared[name].type, value)
        return field, self._engine._event(spi.EventKind.INPUT_RECEIVED, state, {"input_name": name})

    @staticmethod
    def signal_outcome(execution_id: str, name: str, outcome: spi.SignalOutcome) -> None:
        """Raise what a refused delivery means (already delivered, already ended); nothing for Delivered."""
        match outcome:
            case spi.AlreadyDelivered():
                raise errors.FlowAlreadyDelivered(execution_id, name)
            case spi.AlreadyTerminal(status):
                raise errors.FlowExecutionTerminal(execution_id, status.show())

    async def _deliver_here(
        self, execution_id: str, name: str, field: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        """Deliver, and when the input makes the execution ready, claim it for this engine in the same one
        store write and hand the claim to its workers: the next attempt starts at once in this process,
        with no wake-up, no poll and no read. Nothing is weakened: an ordinary lease, renewed while the
        attempt runs, that lapses for any engine to take over if this process dies."""
        engine = self._engine
        outcome, claimed = await engine.store.signal_and_claim(
            execution_id, name, field, event, executor_id=engine.executor_id, lease=engine.config.lease
        )
        if claimed is not None and not engine._pool.adopt(claimed):
            # The workers began stopping during the write: hand the claim back at once, keeping every wait
            # row (the execution is then offered to every poll) rather than leave it to lapse after a lease.
            await claimed.finish(spi.Suspended(frozenset(claimed.state.waits)))
        return outcome

    async def cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> spi.CancelOutcome:
        """Ask the execution to cancel: its undos run, then it ends Cancelled(reason). Answers what the ask
        did (Accepted, AlreadyRequested, AlreadyTerminal(status)); never raises for an unknown id."""
        outcome = await self._engine.store.request_cancel(execution_id, reason, actor)
        logger.info(
            "cancel %s: %s",
            execution_id,
            type(outcome).__name__,
            extra={"action": "cancel", "execution_id": execution_id, "actor": actor},
        )
        return outcome

    async def cancel_all(
        self, workflow_id: str | None = None, reason: str = "", actor: str | None = None
    ) -> int:
        """Ask every unended execution of the workflow (of every known workflow when None) to cancel;
        answers how many requests were Accepted (one already asked is not counted again)."""
        engine = self._engine
        if workflow_id is not None:
            ids = {workflow_id}
        else:
            ids = {info.id for info in await engine.store.list_workflows()} | set(engine._registry.ids())
        accepted = 0
        for wf in sorted(ids):
            for state in (await engine.store.list_executions(wf)).items:
                if state.status.terminal:
                    continue
                outcome = await self.cancel(state.execution_id, reason, actor)
                accepted += isinstance(outcome, spi.Accepted)
        return accepted

    async def diagram(self, execution_id: str, format: str = "mermaid") -> str:
        """The execution's version drawn in `format`, with its progress painted on."""
        engine = self._engine
        detail = await self.describe(execution_id)
        return render.render(engine._version_of(detail.state).flow, format, progress=detail.progress)
