"""An execution's flow and progress as the console draws them, whether or not this process serves its
version: the served version when it does, else the version rebuilt from the graph document the store kept
at registration (engine/graph_document.py). A parked execution (a version no process serves) is drawn,
clicked and inspected like any other: its diagram in every format, its JSON progress (the REST route the
node panel maps clicks with) and its node panel all come from here.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flowdeck.console import states
from flowdeck.engine import graph_document, progress
from flowdeck.engine.executions import ExecutionDetail
from flowdeck.engine.flow import Flow
from flowdeck.store import spi

if TYPE_CHECKING:
    from flowdeck.engine.engine import FlowEngine

__all__ = ["Drawable", "drawable", "skeleton", "stored_drawing"]


def skeleton(info: spi.WorkflowInfo | None) -> tuple[Flow | None, str]:
    """The version's skeleton, or why there is none (an old row, or a document this code cannot read)."""
    if info is None:
        return None, "this version is not registered in the store"
    if info.graph is None:
        return None, "registered before the store kept diagrams: only its node list is known"
    try:
        return graph_document.flow_of(info.graph), ""
    except graph_document.GraphDocumentError as error:
        return None, str(error)


async def stored_drawing(
    store: spi.FlowStore, state: spi.ExecutionState, served: frozenset[str]
) -> tuple[Flow | None, progress.Progress | None, str]:
    """The execution's own version rebuilt from its stored graph, with its progress; (None, None, why)
    when the store kept no graph for it. For versions no process here serves: when no process at all
    serves it (`served`), it is parked and nothing is painted running."""
    flow, problem = skeleton(await store.get_workflow(state.flow_id, state.hash))
    if flow is None:
        return None, None, problem
    fields = await store.get_all_fields(state.execution_id)
    history = (await store.get_history(state.execution_id)).events
    runs = state.hash in served
    return flow, progress.build_progress(flow, state, fields, history, runs=runs), ""


@dataclasses.dataclass(frozen=True)
class Drawable:
    """An execution's flow (None when neither served nor stored: `problem` says why) and its detail with
    the progress painted on that flow."""

    flow: Flow | None
    detail: ExecutionDetail
    problem: str = ""


async def drawable(engine: FlowEngine, detail: ExecutionDetail) -> Drawable:
    """`detail`'s flow and progress: the served version's, else the stored graph's."""
    flow = engine.flow_of(detail.state)
    if flow is not None:
        return Drawable(flow, detail)
    served = await states.served_by(engine)
    stored, painted, problem = await stored_drawing(engine.store, detail.state, served)
    if stored is None:
        return Drawable(None, detail, problem)
    return Drawable(stored, dataclasses.replace(detail, progress=painted))
