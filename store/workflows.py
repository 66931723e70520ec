"""A registered workflow version's metadata: its knobs, nodes, inputs and outputs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class WorkflowMeta(BaseModel):
    """A flow's or a node's knobs, as metadata (timeouts in seconds, the retry schedule described)."""

    model_config = ConfigDict(frozen=True)

    description: str = ""
    tags: tuple[str, ...] = ()
    timeout: float | None = None
    retry: str | None = None
    version: str = ""
    # a workflow's concurrency limits in words (`20 running; 1 per order.customer_id`), None when it has
    # none: a store claims the executions of a version with limits under them (`store.concurrency`)
    concurrency: str | None = None


class NodeInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    node_type: str  # output, input, step, sleep, dispatch, loop, foreach, subflow (and race/zip forks)
    tag: str
    location: str = ""
    meta: WorkflowMeta = WorkflowMeta()


class InputInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    tag: str
    json_schema: dict[str, Any] = {}


class WorkflowInfo(BaseModel):
    """A registered workflow version: what a console, an API client or another language needs to know."""

    model_config = ConfigDict(frozen=True)

    id: str
    meta: WorkflowMeta = WorkflowMeta()
    nodes: tuple[NodeInfo, ...] = ()
    inputs: tuple[InputInfo, ...] = ()
    outputs: tuple[str, ...] = ()
    structural_hash: str
    # The version's plan as engine/graph_document.py writes it, so the version draws when no process has
    # its code; None for versions registered before the store kept it (the node list is all they show).
    graph: dict[str, Any] | None = None
