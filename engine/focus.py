"""The node that matters most in a painted graph: where a diagram too large to show whole at a readable
size opens (the console's diagram viewer centres it).

An operator opens an execution to see why it is where it is, so the rule ranks a node's status by how
much it asks of them: a stop (someone must act), then a failure, then where it is now (running, waiting,
sleeping), then, on a quiet execution, the last node it completed. Gateways and joins (no durable
path) are never chosen. A subflow is painted with the state of
its children; the child is the place to look at, so a node whose child carries the same rank loses to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowdeck.engine.graph import GraphNode
from flowdeck.engine.node_status import NodeStatus

__all__ = ["RANKS", "matters_most"]

# Lower is more urgent; a status absent here (pending, lost, ...) never draws the eye.
RANKS: dict[str, int] = {
    NodeStatus.STOPPED: 0,
    NodeStatus.ANSWERED: 0,  # the stop a person answered: still where the execution waits for a resume
    NodeStatus.FAILED: 1,
    NodeStatus.RUNNING: 2,
    NodeStatus.WAITING: 2,
    NodeStatus.SLEEPING: 2,
    NodeStatus.INTERRUPTED: 2,  # where a cancel or an end found it
    NodeStatus.COMPLETED: 3,
    NodeStatus.WON: 3,
}


def matters_most(nodes: Sequence[GraphNode]) -> str:
    """The graph id of the node that matters most, or "" when nothing is painted. Plan order breaks ties:
    the first stop, failure or live node, but the LAST completed one (where a quiet execution got to)."""
    ranked = [n for n in nodes if n.status in RANKS and n.path]  # a gateway or a join is no place to look
    if not ranked:
        return ""
    best = min(RANKS[n.status] for n in ranked)
    same = [n for n in ranked if RANKS[n.status] == best]
    parents = {n.parent for n in same}
    leaves = [n for n in same if n.id not in parents]  # a subflow whose own child carries its rank
    chosen = leaves or same
    return (chosen[-1] if best == RANKS[NodeStatus.COMPLETED] else chosen[0]).id
