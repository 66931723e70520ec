"""The progress document the live feed pushes to an execution's pages: the execution's diagram in the
JSON format, exactly what `GET /api/v1/executions/<id>/diagram?format=json` answers.

The feed computes it once per execution per burst of events, on its own store and loop, and sends it to
every page watching that execution, so no page fetches it per event (bench W10). `seq` is the newest event
the document reflects (the history it was built from), so that a page never paints an older state over a
newer one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flowdeck.console import discovery
from flowdeck.engine import progress, render, schema
from flowdeck.engine.flow import Flow
from flowdeck.store import spi

__all__ = ["FlowOf", "LiveProgress", "document", "served_flows"]

FlowOf = Callable[[spi.ExecutionState], Flow | None]  # as the engine's `flow_of`: the definition served


def served_flows() -> FlowOf:
    """`flow_of` over the versions this process serves (`runtime.serve` registers the same set on the web
    engine), without an engine: the feed's thread registers nothing and writes nothing."""
    served = {(wid, schema.structural_hash(flow)): flow for wid, flow in discovery.served()}
    return lambda state: served.get((state.flow_id, state.hash))


@dataclass(frozen=True)
class LiveProgress:
    """An execution's progress as a page hears it; `document` None: it could not be built here (a
    version this server does not serve), so the page fetches the diagram itself."""

    execution_id: str
    id: int  # the newest event id read when it was built
    seq: int
    document: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "progress",
            "execution_id": self.execution_id,
            "id": self.id,
            "seq": self.seq,
            "progress": self.document,
        }


async def document(store: spi.FlowStore, flow_of: FlowOf, execution_id: str, event_id: int) -> LiveProgress:
    """The execution's progress now, built as the diagram route builds it (`Executions.diagram`)."""
    state, fields, history = await asyncio.gather(
        store.get_execution(execution_id), store.get_all_fields(execution_id), store.get_history(execution_id)
    )
    flow = None if state is None else flow_of(state)
    if state is None or flow is None:
        return LiveProgress(execution_id, event_id, 0, None)
    events = history.events
    painted = progress.build_progress(flow, state, fields, events)
    seq = max((event.seq or 0 for event in events), default=0)
    drawn = json.loads(render.render(flow, "json", progress=painted))
    return LiveProgress(execution_id, event_id, seq, drawn)
