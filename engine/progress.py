"""Per-node progress: what an execution's record says about each node of its flow (spec §3.6).

Pure: it reads a row, its fields and its history, and calls no store. The rules, first match wins per node:

1. the node the execution stopped at (a Stopped status) → stopped;
2. a recorded failure (StepFailed, resolved to its owner node) not superseded by a later completion → failed;
3. a NodeCompensated mark → compensated;
4. a completion: StepCompleted / SleepCompleted / InputDischarged / InputSupplied / Answered events, and any
   node whose value field exists (delivered inputs, outputs, dispatch/loop/foreach results) → completed;
5. a wait row: OnField → waiting, At → sleeping (with its deadline);
6. otherwise, in every sequence the first node not yet done is running while the execution is Running
   (pending when it is not), and everything after it is pending.

Walking by sequence rather than by a flat list is what makes parallel branches each show their own running
node, and keeps a node behind a wait from showing as running. Subflow children appear as `sub~name`; a
subflow takes its status from its children unless a failure or stop sits on the subflow node itself.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from engine import nodes, schema, traversal
from engine.traversal import qualify
from store import spi

if TYPE_CHECKING:
    from engine.flow import Flow

__all__ = ["NodeProgress", "NodeStatus", "Progress", "build_progress", "node_type", "walk"]


class NodeStatus(enum.StrEnum):
    COMPLETED = "completed"
    RUNNING = "running"
    PENDING = "pending"
    WAITING = "waiting"
    SLEEPING = "sleeping"
    FAILED = "failed"
    COMPENSATED = "compensated"
    STOPPED = "stopped"


# Statuses after which a sequence moves on to its next node.
_DONE = frozenset({NodeStatus.COMPLETED, NodeStatus.COMPENSATED})


@dataclass(frozen=True)
class NodeProgress:
    """One node's status. `name` is its durable path; `detail` the failure, stop reason, chosen branch or
    `k/n`; `until` a sleep's deadline; `done`/`total` a foreach's items recorded so far and its count."""

    name: str
    node_type: str
    status: NodeStatus
    detail: str = ""
    until: datetime | None = None
    done: int | None = None
    total: int | None = None
    location: str = ""


@dataclass(frozen=True)
class Progress:
    nodes: tuple[NodeProgress, ...] = ()

    def by_name(self, name: str) -> NodeProgress | None:
        """The entry for durable path `name` (the first, when parallel branches share a name)."""
        return next((n for n in self.nodes if n.name == name), None)

    @property
    def completed_count(self) -> int:
        return sum(1 for n in self.nodes if n.status is NodeStatus.COMPLETED)

    @property
    def total_count(self) -> int:
        return len(self.nodes)


def node_type(node: nodes.Node) -> str:
    """The node kind's word, as NodeInfo and the diagrams spell it."""
    return traversal.kind(node)


def walk(flow: Flow, prefix: str = "") -> Iterator[tuple[str, nodes.Node]]:
    """Every named node of `flow` with its durable path, in plan order (subflow children after their
    subflow, parallel branches one after the other)."""
    for place in traversal.walk(flow, prefix):
        yield place.path, place.node


# --------------------------------------------------------------------------------------------- record


@dataclass(frozen=True)
class _Record:
    """What the row, fields and history say, indexed by durable path."""

    running: bool
    completed: frozenset[str]
    failed: Mapping[str, str]
    compensated: frozenset[str]
    waits: Mapping[str, spi.Wake]
    fields: Mapping[str, spi.FieldData]
    stopped_at: str | None
    stop_detail: str
    chosen: Mapping[str, str]


_COMPLETION_KEYS: dict[spi.EventKind, str] = {
    spi.EventKind.STEP_COMPLETED: "step_name",
    spi.EventKind.SLEEP_COMPLETED: "step_name",
    spi.EventKind.INPUT_DISCHARGED: "input_name",
    spi.EventKind.INPUT_SUPPLIED: "input_name",
    spi.EventKind.ANSWERED: "node",
}


def _record(
    state: spi.ExecutionState,
    fields: Mapping[str, spi.FieldData],
    history: Sequence[spi.Event],
    known: frozenset[str],
) -> _Record:
    completed: set[str] = set()
    failed: dict[str, str] = {}
    compensated: set[str] = set()
    chosen: dict[str, str] = {}
    for event in history:
        data = event.data
        key = _COMPLETION_KEYS.get(event.kind)
        if key is not None:
            # Exact paths only: `items~3` completing is one foreach item, not the foreach.
            path = str(data.get(key, ""))
            if path in known:
                completed.add(path)
                failed.pop(path, None)
        elif event.kind is spi.EventKind.STEP_FAILED:
            path = schema.owner_of(str(data.get("step_name", "")), known)
            if path is not None:
                failed[path] = str(data.get("error", ""))
        elif event.kind is spi.EventKind.NODE_COMPENSATED:
            path = schema.owner_of(str(data.get("node_name", "")), known)
            if path is not None:
                compensated.add(path)
        elif event.kind is spi.EventKind.BRANCH_CHOSEN:
            chosen[str(data.get("dispatch_name", ""))] = str(data.get("branch_name", ""))
    for name, value in fields.items():
        if name.endswith("#chosen"):
            chosen.setdefault(name[: -len("#chosen")], _decoded_text(value))
        elif name in known:
            completed.add(name)
            failed.pop(name, None)
    status = state.status
    stopped_at, stop_detail = None, ""
    if isinstance(status, spi.Stopped):
        stopped_at = schema.owner_of(status.node, known) or ""
        stop_detail = f"{status.code}: {status.reason}" if status.reason else status.code
    return _Record(
        running=isinstance(status, spi.Running),
        completed=frozenset(completed),
        failed=failed,
        compensated=frozenset(compensated),
        waits={
            path: wake for p, wake in state.waits.items() if (path := schema.owner_of(p, known)) is not None
        },
        fields=fields,
        stopped_at=stopped_at,
        stop_detail=stop_detail,
        chosen=chosen,
    )


def _decoded_text(value: spi.FieldData) -> str:
    try:
        decoded = value.decode()
    except (ValueError, TypeError):
        return value.value
    return decoded if isinstance(decoded, str) else json.dumps(decoded)


def _count(fields: Mapping[str, spi.FieldData], path: str) -> tuple[int | None, int | None]:
    """A foreach's recorded items and its count (None until the collection was recorded)."""
    raw = fields.get(f"{path}~count")
    total: int | None = None
    if raw is not None:
        try:
            decoded = raw.decode()
            total = decoded if isinstance(decoded, int) else len(decoded)
        except (ValueError, TypeError):
            total = None
    prefix = f"{path}~"
    done = sum(1 for name in fields if name.startswith(prefix) and name[len(prefix) :].isdigit())
    if total is None:
        return (done or None), None
    return min(done, total), total


# ----------------------------------------------------------------------------------------------- build


def build_progress(
    flow: Flow,
    state: spi.ExecutionState,
    fields: Mapping[str, spi.FieldData],
    history: Sequence[spi.Event],
) -> Progress:
    """Every named node of `flow` (subflow children as `sub~name`) with the status its record implies."""
    known = frozenset(path for path, _ in walk(flow))
    record = _record(state, fields, history, known)
    rows: dict[str, NodeProgress] = {}
    frontier_stop = record.stopped_at == ""  # stopped with no node named: paint where it stands
    _sequence(flow, "", record, rows, active=True, stop_at_frontier=frontier_stop)
    return Progress(tuple(rows.values()))


def _sequence(
    flow: Flow,
    prefix: str,
    record: _Record,
    rows: dict[str, NodeProgress],
    *,
    active: bool,
    stop_at_frontier: bool,
) -> bool:
    """Paint one chain of nodes; `active` is whether this chain has reached its frontier yet. Answers
    whether the whole chain is done (so the caller's chain may go on)."""
    for node in flow.nodes:
        if isinstance(node, nodes.Parallel):
            # A first pass on scratch rows finds which branches are done: a won race runs its losers no
            # further, so they are painted as they stand, with nothing running.
            done = [
                _sequence(b, prefix, record, dict(rows), active=active, stop_at_frontier=stop_at_frontier)
                for b in node.branches
            ]
            won = node.kind == "race" and any(done)
            for branch, finished in zip(node.branches, done, strict=True):
                still = active and (finished or not won)
                _sequence(branch, prefix, record, rows, active=still, stop_at_frontier=stop_at_frontier)
            active = active and (won or all(done))
            continue
        path = qualify(prefix, node.name)
        if isinstance(node, nodes.Subflow):
            row = _subflow(node, path, record, rows, active=active, stop_at_frontier=stop_at_frontier)
        else:
            row = _row(node, path, record, active=active, stop_at_frontier=stop_at_frontier)
        rows.setdefault(path, row)
        if row.status not in _DONE:
            active = False
    return active


def _row(
    node: nodes.Node, path: str, record: _Record, *, active: bool, stop_at_frontier: bool
) -> NodeProgress:
    kind = node_type(node)
    location = getattr(node, "location", "")
    done, total = _count(record.fields, path) if isinstance(node, nodes.ForEach) else (None, None)
    counted = f"{done or 0}/{total}" if total is not None else ""

    def row(status: NodeStatus, detail: str = "", until: datetime | None = None) -> NodeProgress:
        return NodeProgress(path, kind, status, detail, until, done, total, location)

    if record.stopped_at == path:
        return row(NodeStatus.STOPPED, record.stop_detail)
    if path in record.failed:
        return row(NodeStatus.FAILED, record.failed[path])
    if path in record.compensated:
        return row(NodeStatus.COMPENSATED)
    if path in record.completed:
        return row(NodeStatus.COMPLETED, record.chosen.get(path, "") or counted)
    wake = record.waits.get(path)
    if isinstance(wake, spi.WakeOnField):
        return row(NodeStatus.WAITING, counted)
    if isinstance(wake, spi.WakeAt):
        return row(NodeStatus.SLEEPING, counted, wake.at)
    if active and stop_at_frontier:
        return row(NodeStatus.STOPPED, record.stop_detail)
    if active and record.running:
        return row(NodeStatus.RUNNING, record.chosen.get(path, "") or counted)
    return row(NodeStatus.PENDING, counted)


def _subflow(
    node: nodes.Subflow,
    path: str,
    record: _Record,
    rows: dict[str, NodeProgress],
    *,
    active: bool,
    stop_at_frontier: bool,
) -> NodeProgress:
    """A subflow's own row comes first; its status is derived from its children's."""
    existed = path in rows
    if not existed:  # hold the subflow's place ahead of its children
        rows[path] = NodeProgress(path, "subflow", NodeStatus.PENDING, location=node.location)
    children_start = len(rows)
    _sequence(node.child, path, record, rows, active=active, stop_at_frontier=stop_at_frontier)
    children = [r for r in list(rows.values())[children_start:] if r.name.startswith(f"{path}~")]
    own = _row(node, path, record, active=False, stop_at_frontier=False)
    if own.status in (NodeStatus.STOPPED, NodeStatus.FAILED, NodeStatus.COMPENSATED):
        status, detail = own.status, own.detail
    else:
        status, detail = _derived(children, own.status, active=active, running=record.running), ""
    row = NodeProgress(path, "subflow", status, detail, location=node.location)
    if not existed:
        rows[path] = row
    return row


def _derived(children: Sequence[NodeProgress], own: NodeStatus, *, active: bool, running: bool) -> NodeStatus:
    statuses = {c.status for c in children}
    if not children:
        if own is NodeStatus.COMPLETED:
            return own
        return NodeStatus.RUNNING if active and running else NodeStatus.PENDING
    if statuses <= {NodeStatus.COMPLETED}:
        return NodeStatus.COMPLETED
    if statuses <= _DONE:
        return NodeStatus.COMPENSATED
    if NodeStatus.STOPPED in statuses:
        return NodeStatus.STOPPED
    if NodeStatus.FAILED in statuses:
        return NodeStatus.FAILED
    if statuses & {NodeStatus.RUNNING, NodeStatus.WAITING, NodeStatus.SLEEPING}:
        return NodeStatus.RUNNING
    return NodeStatus.PENDING
