"""Per-node progress: what an execution's record says about each node of its flow (spec §3.6), per PLACE.

A place is one node where it sits in the plan, named by the id its drawing gives it (engine/graph.py's
`n1, n2, …`): the three `decision` outputs of a race share one durable path but are three places, each
with its own state. The record (engine/progress_record.py) speaks of paths; a fact about a path that
several places share goes to the place that could have produced it (every node before it on its branch
done), the latest-unblocked one for a completion. The rules, first match wins per place:

1. the node the execution stopped at (a Stopped status) → stopped, or answered once a person answered it
   (an Answered event: it awaits a resume);
2. a recorded failure (StepFailed, resolved to its owner node) not superseded by a later completion → failed;
3. a NodeCompensated mark → compensated;
4. a completion: StepCompleted / SleepCompleted / InputDischarged / InputSupplied / Answered events, and any
   node whose value field exists (delivered inputs, outputs, dispatch/loop/foreach results) → completed;
5. a wait row: OnField → waiting, At → sleeping (with its deadline);
6. otherwise, in every sequence the first node not yet done is running while the execution is Running,
   interrupted once a cancel or an operator's end ended it, else pending; everything after it is pending.
A node answered on a stopped execution (an Answered event) is answered rather than completed until the
execution resumes.

A race then settles: the first branch done is its winner, painted won; every other branch's unfinished or
failed nodes are lost (an arm that failed while another can still win is lost too, not failed: the race
goes on). A foreach counts its items done, running and failed of N; a loop_on its iterations so far, a
completed loop its iterations (from its StepCompleted; a loop in flight has no durable count). Subflow
children appear as `sub~name`; a subflow takes its status from its children unless a failure or stop sits
on the subflow node itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from flowdeck.engine import graph, nodes, progress_record, traversal
from flowdeck.engine.node_status import NodeStatus
from flowdeck.engine.progress_record import Record
from flowdeck.engine.traversal import qualify
from flowdeck.store import spi

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["NodeProgress", "NodeStatus", "Progress", "build_progress", "node_type", "walk"]

# Statuses after which a sequence moves on to its next node.
_DONE = frozenset({NodeStatus.COMPLETED, NodeStatus.COMPENSATED, NodeStatus.WON, NodeStatus.ANSWERED})
# Statuses a race's loser keeps: what it finished, it finished; what a cancel cut short, it cut short.
_KEPT = frozenset(
    {
        NodeStatus.COMPLETED,
        NodeStatus.COMPENSATED,
        NodeStatus.STOPPED,
        NodeStatus.LOST,
        NodeStatus.ANSWERED,
        NodeStatus.INTERRUPTED,
    }
)


@dataclass(frozen=True)
class NodeProgress:
    """One node's status at one place. `name` is its durable path; `place` the drawn node's id; `detail`
    the failure, stop reason (with its code), chosen branch, `k/n` items or loop iterations; `until` a
    sleep's deadline; `done`/`total` a foreach's items recorded so far and its count, `items_running` and
    `items_failed` the ones started and not done, and failed; `iterations` a loop_on's checkpoints or a
    completed loop's iterations. `shared`: other places carry the same durable path (a race's arms that all
    produce `decision`), so only `place` tells this one apart; `recorded`: what the record holds under the
    path (attempts, value, wait) is this place's, false for a shared path's place that another place's
    facts went to (a losing arm that never ran it)."""

    name: str
    node_type: str
    status: NodeStatus
    detail: str = ""
    until: datetime | None = None
    done: int | None = None
    total: int | None = None
    location: str = ""
    place: str = ""
    items_running: int | None = None
    items_failed: int | None = None
    iterations: int | None = None
    shared: bool = False
    recorded: bool = True


@dataclass(frozen=True)
class Progress:
    nodes: tuple[NodeProgress, ...] = ()

    def by_name(self, name: str) -> NodeProgress | None:
        """The entry for durable path `name` (the first, when parallel branches share a name)."""
        return next((n for n in self.nodes if n.name == name), None)

    def by_place(self, place: str) -> NodeProgress | None:
        """The entry for the drawn node `place` (a graph node id)."""
        return next((n for n in self.nodes if n.place == place), None)

    @property
    def completed_count(self) -> int:
        return sum(1 for n in self.nodes if n.status in (NodeStatus.COMPLETED, NodeStatus.WON))

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


# ------------------------------------------------------------------------------------------------ plan


@dataclass(frozen=True)
class _At:
    """A named node at its place; a subflow's child chain rides along."""

    node: nodes.Node
    path: str
    place: str
    child: tuple[_Item, ...] = ()


@dataclass(frozen=True)
class _Fork:
    kind: str
    branches: tuple[tuple[_Item, ...], ...]


_Item = _At | _Fork


def _plan(flow: Flow, prefix: str, places: Iterator[str]) -> tuple[_Item, ...]:
    """The flow as chains of places; `places` yields the graph's ids for named nodes in plan order."""
    items: list[_Item] = []
    for node in flow.nodes:
        if isinstance(node, nodes.Parallel):
            items.append(_Fork(node.kind, tuple(_plan(b, prefix, places) for b in node.branches)))
            continue
        path = qualify(prefix, node.name)
        place = next(places)
        child = _plan(node.child, path, places) if isinstance(node, nodes.Subflow) else ()
        items.append(_At(node, path, place, child))
    return tuple(items)


def _places(items: Sequence[_Item]) -> Iterator[_At]:
    for item in items:
        if isinstance(item, _Fork):
            for branch in item.branches:
                yield from _places(branch)
        else:
            yield item
            yield from _places(item.child)


# ----------------------------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class _Facts:
    """What the record says about one place."""

    completed: bool = False
    failure: str | None = None
    wait: spi.Wake | None = None
    stopped: bool = False


def _unique_facts(record: Record, path: str) -> _Facts:
    return _Facts(
        completed=path in record.completed,
        failure=record.live_failure(path),
        wait=record.waits.get(path),
        stopped=record.stopped_at == path,
    )


def _reach(
    items: Sequence[_Item], record: Record, open_: bool, since: int, out: dict[str, tuple[bool, int]]
) -> tuple[bool, int]:
    """Per place: could it have run (every node before it on its branch completed) and since when."""
    for item in items:
        if isinstance(item, _Fork):
            ends = [_reach(b, record, open_, since, out) for b in item.branches]
            pick = any if item.kind == "race" else all
            open_ = open_ and pick(o for o, _ in ends)
            since = max([since, *(s for o, s in ends if o)])
            continue
        out[item.place] = (open_, since)
        if item.child:
            open_, since = _reach(item.child, record, open_, since, out)
        elif item.path in record.completed:
            since = max(since, record.completed[item.path])
        else:
            open_ = False
    return open_, since


def _shared_facts(places: Sequence[_At], record: Record, reach: Mapping[str, tuple[bool, int]]) -> dict:
    """Hand a shared path's facts to its places: the completion to the open place unblocked last before
    it, a failure to the other open places that were open before it, a wait or stop to the latest open."""
    path = places[0].path
    open_ = [p.place for p in places if reach[p.place][0]] or [places[0].place]
    since = {p: reach[p][1] for p in open_}
    facts: dict[str, _Facts] = {}
    done = record.completed.get(path)
    winner = None
    if done is not None:
        before = [p for p in open_ if since[p] < done] or open_
        winner = max(before, key=lambda p: since[p])
        facts[winner] = _Facts(completed=True)
    failure = record.failed.get(path)
    if failure is not None:
        at, error = failure
        others = [p for p in open_ if p != winner and since[p] < at]
        if not others and winner is not None and done is not None and at > done:
            others = [winner]
        elif not others and winner is None:
            others = [max(open_, key=lambda p: since[p])]
        for p in others:
            facts[p] = replace(facts.get(p, _Facts()), completed=False, failure=error)
    latest = max(open_, key=lambda p: since[p])
    wait = record.waits.get(path)
    if wait is not None and latest not in facts:
        facts[latest] = _Facts(wait=wait)
    if record.stopped_at == path:
        facts[latest] = _Facts(stopped=True)
    return facts


def _by_path(plan: Sequence[_Item]) -> dict[str, list[_At]]:
    by_path: dict[str, list[_At]] = {}
    for at in _places(plan):
        by_path.setdefault(at.path, []).append(at)
    return by_path


def _facts(plan: Sequence[_Item], by_path: Mapping[str, list[_At]], record: Record) -> dict[str, _Facts]:
    reach: dict[str, tuple[bool, int]] = {}
    _reach(plan, record, True, -1, reach)
    facts: dict[str, _Facts] = {}
    for path, places in by_path.items():
        if len(places) == 1 or isinstance(places[0].node, nodes.Input):
            # an input several branches declare is one delivery serving them all
            facts.update({p.place: _unique_facts(record, path) for p in places})
        else:
            shared = _shared_facts(places, record, reach)
            facts.update({p.place: shared.get(p.place, _Facts()) for p in places})
    return facts


# ----------------------------------------------------------------------------------------------- build


@dataclass(frozen=True)
class _Paint:
    record: Record
    facts: Mapping[str, _Facts]
    stop_at_frontier: bool
    shared: frozenset[str] = frozenset()  # places whose durable path other places carry too


def build_progress(
    flow: Flow,
    state: spi.ExecutionState,
    fields: Mapping[str, spi.FieldData],
    history: Sequence[spi.Event],
    *,
    runs: bool = True,
) -> Progress:
    """Every named node of `flow` at each of its places (subflow children as `sub~name`) with the status
    its record implies. `runs` False says no process serves the execution's version (it is parked):
    nothing is painted running, its frontier stays pending."""
    drawn = graph.build_graph(flow)
    plan = _plan(flow, "", (n.id for n in drawn.nodes if n.path and n.kind != "branch"))
    known = frozenset(at.path for at in _places(plan))
    record = progress_record.read(state, fields, history, known, runs)
    by_path = _by_path(plan)
    shared = frozenset(at.place for ats in by_path.values() if len(ats) > 1 for at in ats)
    facts = _facts(plan, by_path, record)
    paint = _Paint(record, facts, stop_at_frontier=record.stopped_at == "", shared=shared)
    rows: dict[str, NodeProgress] = {}
    _sequence(plan, paint, rows, active=True)
    return Progress(tuple(rows.values()))


def _sequence(items: Sequence[_Item], paint: _Paint, rows: dict[str, NodeProgress], *, active: bool) -> bool:
    """Paint one chain of places; `active` is whether this chain has reached its frontier yet. Answers
    whether the whole chain is done (so the caller's chain may go on)."""
    for item in items:
        if isinstance(item, _Fork):
            active = _fork(item, paint, rows, active=active)
            continue
        if item.child:
            row = _subflow(item, paint, rows, active=active)
        else:
            row = _row(item, paint, active=active)
        rows.setdefault(item.place, row)
        if row.status not in _DONE:
            active = False
    return active


def _fork(fork: _Fork, paint: _Paint, rows: dict[str, NodeProgress], *, active: bool) -> bool:
    # A first pass on scratch rows finds which branches are done: a won race runs its losers no further,
    # so they are painted as they stand, with nothing running.
    done = [_sequence(b, paint, dict(rows), active=active) for b in fork.branches]
    race = fork.kind == "race"
    winner = next((i for i, d in enumerate(done) if d), None) if race else None
    for index, branch in enumerate(fork.branches):
        still = active and (done[index] or winner is None)
        _sequence(branch, paint, rows, active=still)
    if race:
        _settle(fork, winner, rows)
    return active and (winner is not None or all(done))


def _settle(fork: _Fork, winner: int | None, rows: dict[str, NodeProgress]) -> None:
    """A decided race: its winner won, the rest lost. An undecided one: an arm that failed while another
    can still win has lost (the race goes on); all failed, the race failed."""
    branch_places = [[at.place for at in _places(b)] for b in fork.branches]
    if winner is None:
        failed = [any(rows[p].status is NodeStatus.FAILED for p in ps) for ps in branch_places]
        if all(failed):
            return
        losers = [i for i, f in enumerate(failed) if f]
    else:
        losers = [i for i in range(len(fork.branches)) if i != winner]
        for place in _direct(fork.branches[winner]):
            if rows[place].status is NodeStatus.COMPLETED:
                rows[place] = replace(rows[place], status=NodeStatus.WON)
    for i in losers:
        for place in branch_places[i]:
            if rows[place].status not in _KEPT:
                rows[place] = replace(rows[place], status=NodeStatus.LOST)


def _direct(items: Sequence[_Item]) -> Iterator[str]:
    """A winning branch's own places: not those of a race inside it, which settled its own arms."""
    for item in items:
        if isinstance(item, _Fork):
            if item.kind != "race":
                for branch in item.branches:
                    yield from _direct(branch)
        else:
            yield item.place
            yield from _direct(item.child)


def _counts(at: _At, record: Record) -> dict[str, int | None]:
    """A foreach's items (done, running, failed of total), a loop_on's iterations so far (its checkpoints),
    or a completed loop's iterations (its StepCompleted tells them; one in flight has no durable count)."""
    if isinstance(at.node, nodes.LoopOn):
        # the iteration that answered done writes the loop's value, not a checkpoint
        so_far = record.checkpoints.get(at.path)
        return {"iterations": (so_far or 0) + 1 if at.path in record.fields else so_far}
    if isinstance(at.node, nodes.Loop):
        return {"iterations": record.iterations.get(at.path)}
    if not isinstance(at.node, nodes.ForEach):
        return {}
    prefix = f"{at.path}~"
    recorded = {
        int(n[len(prefix) :]) for n in record.fields if n.startswith(prefix) and n[len(prefix) :].isdigit()
    }
    failed = record.items_failed.get(at.path, frozenset()) - recorded
    running = record.items_started.get(at.path, frozenset()) - recorded - failed if record.running else set()
    total: int | None = None
    raw = record.fields.get(f"{at.path}~count")
    if raw is not None:
        try:
            decoded = raw.decode()
            total = decoded if isinstance(decoded, int) else len(decoded)
        except (ValueError, TypeError):
            total = None
    done: int | None = len(recorded) if total is None else min(len(recorded), total)
    return {
        "done": (done or None) if total is None else done,
        "total": total,
        "items_running": len(running) or None,
        "items_failed": len(failed) or None,
    }


def _counted(at: _At, counts: Mapping[str, int | None], record: Record) -> str:
    iterations = counts.get("iterations")
    if iterations and (isinstance(at.node, nodes.Loop) or at.path in record.fields):
        return f"{iterations} iteration" + ("" if iterations == 1 else "s")
    if iterations:
        return f"iteration {iterations}"  # a loop_on's checkpoints so far
    total = counts.get("total")
    if total is None:
        return ""
    text = f"{counts.get('done') or 0}/{total}"
    extra = [
        f"{counts[k]} {w}"
        for k, w in (("items_running", "running"), ("items_failed", "failed"))
        if counts.get(k)
    ]
    return ", ".join([text, *extra])


# A place whose record is the path's whatever its facts: the attempt under way is the frontier's.
_UNDER_WAY = frozenset({NodeStatus.RUNNING, NodeStatus.INTERRUPTED})


def _row(at: _At, paint: _Paint, *, active: bool) -> NodeProgress:
    row = _status_row(at, paint, active=active)
    if at.place not in paint.shared:
        return row
    own = isinstance(at.node, nodes.Input) or paint.facts.get(at.place, _Facts()) != _Facts()
    return replace(row, shared=True, recorded=own or row.status in _UNDER_WAY)


def _status_row(at: _At, paint: _Paint, *, active: bool) -> NodeProgress:
    record = paint.record
    facts = paint.facts.get(at.place, _Facts())
    counts = _counts(at, record)
    counted = _counted(at, counts, record)
    base = NodeProgress(
        at.path,
        node_type(at.node),
        NodeStatus.PENDING,
        location=getattr(at.node, "location", ""),
        place=at.place,
    )
    base = replace(base, **counts)

    def row(status: NodeStatus, detail: str = "", until: datetime | None = None) -> NodeProgress:
        return replace(base, status=status, detail=detail, until=until)

    answered = at.path in record.answered
    if facts.stopped:
        if answered:
            return row(NodeStatus.ANSWERED, f"answered; was {record.stop_detail}")
        return row(NodeStatus.STOPPED, record.stop_detail)
    if facts.failure is not None:
        return row(NodeStatus.FAILED, f"{counted}; {facts.failure}" if counted else facts.failure)
    if at.path in record.compensated:
        return row(NodeStatus.COMPENSATED)
    if facts.completed:
        chosen = record.chosen.get(at.path, "") or counted
        return row(NodeStatus.ANSWERED if answered else NodeStatus.COMPLETED, chosen)
    if isinstance(facts.wait, spi.WakeOnField):
        return row(NodeStatus.WAITING, counted)
    if isinstance(facts.wait, spi.WakeAt):
        return row(NodeStatus.SLEEPING, counted, facts.wait.at)
    if active and paint.stop_at_frontier:
        return row(NodeStatus.STOPPED, record.stop_detail)
    if active and record.running:
        return row(NodeStatus.RUNNING, record.chosen.get(at.path, "") or counted)
    if active and record.interrupted:
        return row(NodeStatus.INTERRUPTED, counted)
    return row(NodeStatus.PENDING, counted)


def _subflow(at: _At, paint: _Paint, rows: dict[str, NodeProgress], *, active: bool) -> NodeProgress:
    """A subflow's own row comes first; its status is derived from its children's."""
    location = getattr(at.node, "location", "")
    existed = at.place in rows
    if not existed:  # hold the subflow's place ahead of its children
        rows[at.place] = NodeProgress(
            at.path, "subflow", NodeStatus.PENDING, location=location, place=at.place
        )
    _sequence(at.child, paint, rows, active=active)
    children = [rows[c.place] for c in _places(at.child) if c.place in rows]
    own = _row(at, paint, active=False)
    if own.status in (NodeStatus.STOPPED, NodeStatus.FAILED, NodeStatus.COMPENSATED):
        status, detail = own.status, own.detail
    else:
        status, detail = _derived(children, own.status, active=active, running=paint.record.running), ""
    row = NodeProgress(at.path, "subflow", status, detail, location=location, place=at.place)
    if not existed:
        rows[at.place] = row
    return row


def _derived(children: Sequence[NodeProgress], own: NodeStatus, *, active: bool, running: bool) -> NodeStatus:
    statuses = {c.status for c in children}
    if not children:
        if own is NodeStatus.COMPLETED:
            return own
        return NodeStatus.RUNNING if active and running else NodeStatus.PENDING
    if statuses <= {NodeStatus.COMPLETED, NodeStatus.WON, NodeStatus.LOST}:
        return NodeStatus.COMPLETED
    if NodeStatus.ANSWERED in statuses and statuses <= _DONE | {NodeStatus.LOST}:
        return NodeStatus.ANSWERED
    if statuses <= _DONE | {NodeStatus.LOST}:
        return NodeStatus.COMPENSATED
    if NodeStatus.STOPPED in statuses:
        return NodeStatus.STOPPED
    if NodeStatus.FAILED in statuses:
        return NodeStatus.FAILED
    if statuses & {NodeStatus.RUNNING, NodeStatus.WAITING, NodeStatus.SLEEPING}:
        return NodeStatus.RUNNING
    if NodeStatus.INTERRUPTED in statuses:
        return NodeStatus.INTERRUPTED
    return NodeStatus.PENDING
