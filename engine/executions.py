"""`engine.executions`: watching and steering individual executions (describe, search, history, signal,
cancel, cancel_all, diagram), and the values its reads answer. `FlowEngine` builds one per engine."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flowdeck.engine import errors, field_paths, progress, render, tracing, values
from flowdeck.engine.inputs import check_value as _check_value
from flowdeck.engine.inputs import declared_inputs
from flowdeck.engine.inputs import undeclared as _undeclared
from flowdeck.store import field_terms, spi

if TYPE_CHECKING:
    from flowdeck.engine.engine import FlowEngine

__all__ = ["ExecutionDetail", "Executions", "InputStatus", "SearchResult"]

logger = logging.getLogger("flowdeck.engine.engine")  # the verbs log as the engine did before the split


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


# ------------------------------------------------------------------------------------------ surface


class Executions:
    """`flowdeck.engine.executions`: watching and steering individual executions."""

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
        a term that is not one, too many terms, a field path no served version of `workflow_id` can record
        (naming the nearest that exist), or another order raises `spi.FilterParseError`."""
        if offset < 0:
            raise spi.FilterParseError(f"offset must not be negative (got {offset})")
        if order_by not in spi.ORDER_BY:
            raise spi.FilterParseError(
                f"order_by must be one of {', '.join(spi.ORDER_BY)} (got {order_by!r})"
            )
        filt = spi.ExecutionFilter.parse(status) if isinstance(status, str) else status
        fields = field_terms.parse_terms(where)
        if workflow_id is not None:
            field_paths.check_terms(workflow_id, self._versions(workflow_id), fields)
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

    def _versions(self, workflow_id: str) -> list[Any]:
        """The flows of every version of `workflow_id` this engine serves."""
        registry = self._engine._registry
        found = (registry.resolve(workflow_id, h) for h in sorted(registry.hashes(workflow_id)))
        return [version.flow for version in found if version is not None]

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
        with engine.tracing.starting("SignalFlow", name, tracing.signalling(execution_id, name)) as started:
            state = await engine.store.get_execution(execution_id)
            field, event = self.prepare_signal(execution_id, state, name, value, carrier=started.carrier())
            # The version resolved above is registered here, so this engine's workers serve it.
            # a limited execution is claimed by the claim only, where the store counts its slots
            if engine._pool.running and (state is None or state.concurrency is None):
                outcome = await self._deliver_here(execution_id, name, field, event)
            else:
                outcome = await engine.store.signal(execution_id, name, field, event)
            self.signal_outcome(execution_id, name, outcome)

    def prepare_signal(
        self,
        execution_id: str,
        state: spi.ExecutionState | None,
        name: str,
        value: Any,
        *,
        carrier: Mapping[str, str] | None = None,
    ) -> tuple[spi.FieldData, spi.Event]:
        """Every check of `signal` against the execution's row `state` (None: there is none), with nothing
        written: the encoded field and its InputReceived event (carrying the delivery span's trace context,
        `carrier`, which the attempt that consumes it links to)."""
        if state is None:
            raise errors.FlowExecutionNotFound(execution_id)
        if state.status.terminal:
            raise errors.FlowExecutionTerminal(state.execution_id, state.status.show())
        declared = declared_inputs(self._engine._version_of(state).flow)
        if name not in declared:
            raise _undeclared(name, declared)
        field = _check_value(name, declared[name].type, value)
        data = tracing.carried({"input_name": name}, carrier or {})
        return field, self._engine._event(spi.EventKind.INPUT_RECEIVED, state, data)

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
        did (Accepted, AlreadyRequested, AlreadyTerminal(status)); FlowExecutionNotFound for an unknown id
        (nothing written)."""
        store = self._engine.store
        outcome = await store.request_cancel(execution_id, reason, actor)
        # the store answers an unknown id as it answers an ended one (it writes nothing for either); the
        # caller asked about an execution that does not exist, which is a different answer (404, not 200)
        if isinstance(outcome, spi.AlreadyTerminal) and await store.get_execution(execution_id) is None:
            raise errors.FlowExecutionNotFound(execution_id)
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
                try:
                    outcome = await self.cancel(state.execution_id, reason, actor)
                except errors.FlowExecutionNotFound:  # purged since it was listed: nothing to ask
                    continue
                accepted += isinstance(outcome, spi.Accepted)
        return accepted

    async def diagram(self, execution_id: str, format: str = "mermaid") -> str:
        """The execution's version drawn in `format`, with its progress painted on."""
        engine = self._engine
        detail = await self.describe(execution_id)
        return render.render(engine._version_of(detail.state).flow, format, progress=detail.progress)
