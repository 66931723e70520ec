"""`run_local`: run one flow to its end in this process, for tests and scripts (kyo-flow's `Flow.runLocal`).

It builds what production has, only smaller: a `MemoryStore`, a one-worker `FlowEngine` polling often,
and an execution started with the given inputs seeded, run here at once (`run_here`: its first attempt
needs no poll). It waits on the real clock, so a flow with a long `sleep` takes that long here: run such
flows on an engine with a `ManualClock` instead.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from flowdeck.engine import errors, interpreter
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.engine.values import Record
from flowdeck.store import spi
from flowdeck.store.memory import MemoryStore

__all__ = ["run_local"]

_POLL = timedelta(milliseconds=50)
_WATCH_SECONDS = 0.005


async def run_local(flow: Flow, /, **inputs: Any) -> Record:
    """Run `flow` with `inputs` seeded and answer its record: every node's value by attribute, subflow
    records nested (`record.payment.charge_id`).

    An end other than Completed raises `FlowRunEnded` carrying the status (Failed, Cancelled, or Stopped
    with its stop code). A flow left waiting for an input nobody gave raises `FlowInputError` naming it.
    """
    store = MemoryStore()
    async with FlowEngine(store, workers=1, poll_timeout=_POLL, shutdown_grace=timedelta(0)) as engine:
        workflow_id = flow.name or "local"
        await engine.register(workflow_id, flow)
        eid = await engine.workflows.start(workflow_id, inputs=inputs, run_here=True)
        state = await _until_settled(store, eid)
    status = state.status
    if not isinstance(status, spi.Completed):
        raise errors.FlowRunEnded(workflow_id, status)
    return interpreter.assemble_record(flow, await store.get_all_fields(eid))


async def _until_settled(store: MemoryStore, execution_id: str) -> spi.ExecutionState:
    """Wait until the execution ended, stopped, or is left waiting on inputs only nobody will give."""
    while True:
        state = await store.get_execution(execution_id)
        assert state is not None
        if state.status.terminal or isinstance(state.status, spi.Stopped):
            return state
        if await _stranded(store, state):
            missing = sorted(w.name for w in state.waits.values() if isinstance(w, spi.WakeOnField))
            raise errors.FlowInputError(
                f"the flow waits for input(s) {', '.join(map(repr, missing))}: pass them to run_local",
                name=missing[0],
            )
        await asyncio.sleep(_WATCH_SECONDS)


async def _stranded(store: MemoryStore, state: spi.ExecutionState) -> bool:
    """Unclaimed, waiting only for inputs that are not there: nothing in this process will ever move it."""
    if state.executor is not None or not state.waits or state.cancel_requested:
        return False
    fields = await store.get_all_fields(state.execution_id)
    return all(isinstance(w, spi.WakeOnField) and w.name not in fields for w in state.waits.values())
