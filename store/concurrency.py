"""Concurrency limits: at most N running of a workflow, at most M running per key, decided by the store.

A workflow declares them (`Meta(concurrency=Concurrency(limit=5, key="order.customer_id", per_key=1))`,
engine/concurrency.py). At its start the engine computes the key from the inputs, and the Created event's
data carries the limits as they were then (`{"concurrency": {"limit": 5, "key": "c-42", "per_key": 1}}`,
absent for a workflow with none); every store sets the row from it, so the store decides with no user code.

Two kinds of group: the workflow's (`Group(flow_id, None)`, capacity `limit`) and a key's
(`Group(flow_id, key)`, capacity `per_key`). An execution belongs to each group its limits name.

What holds a slot: an execution of a claimable status (running, compensating) under a live claim, a lease
that has not lapsed. A claim is held only while an attempt runs: the attempt ends, suspended or finished,
by handing the claim back. So an execution parked on an input or a sleep holds nothing (an approval waiting
for days blocks nobody), one that ends frees its slot with its last write, and a worker that dies holds
its slot until its lease lapses. Only executions started under a limit count towards it (an execution of an
older version without one does not).

The decision is the claim's: a claim takes a limited execution only while each of its groups has room
(holders now, plus what this claim already took, under the capacity the execution carries), in the same
atomic step as the claim. Memory: its lock. SQLite: the write lock of its IMMEDIATE transaction.
PostgreSQL: a transaction-scoped advisory lock per limited workflow, taken before the counting statement,
so its snapshot sees every earlier claimer's commit (store/django/concurrency.py).

Queued: a limited execution that is running with no wait row, no cancel request and no claim: it waits for
a slot (or, when its groups have room, for the next claim; a search cannot tell the two apart without
counting, so both read as queued, and its reads say how many run in its group). It is claimed in claim
order (priority, then age: `claim_order`) when a slot frees; its position is one more than the queued
executions of its group ahead of it in that order (the first full group, else its first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowdeck.store.executions import ExecutionState

__all__ = [
    "CLAIMABLE",
    "MAX_CAPACITY",
    "Group",
    "GroupCount",
    "Limits",
    "Queued",
    "Room",
    "Slotted",
    "group_counts",
    "queue_of",
    "event_data",
    "groups_of",
    "holds_slot",
    "limits_of",
    "within_limits",
]

CLAIMABLE = ("running", "compensating")  # the status kinds whose claimed executions hold a slot
MAX_CAPACITY = 10_000  # a capacity beyond this is no limit worth the counting


@dataclass(frozen=True)
class Limits:
    """The limits one execution runs under, as its start recorded them: `limit` running of its workflow
    (0: none), `per_key` running of its `key` (0 or no key: none)."""

    limit: int = 0
    key: str | None = None
    per_key: int = 0

    @property
    def any(self) -> bool:
        return self.limit > 0 or (self.key is not None and self.per_key > 0)


@dataclass(frozen=True, order=True)
class Group:
    """The executions one capacity counts: a workflow's (`key` None) or one key's of a workflow."""

    flow_id: str
    key: str | None = None

    def show(self) -> str:
        return self.flow_id if self.key is None else f"{self.flow_id} · {self.key}"


@dataclass(frozen=True)
class Queued:
    """Why an execution is not running: the full group it waits on and its place in that group's line
    (1: next)."""

    group: Group
    position: int
    capacity: int
    running: int


def limits_of(data: Mapping[str, Any]) -> Limits | None:
    """The limits a Created event's data carries (None: an unlimited execution)."""
    found = data.get("concurrency")
    if not isinstance(found, Mapping):
        return None
    limit, per_key, key = found.get("limit", 0), found.get("per_key", 0), found.get("key")
    limits = Limits(
        limit=limit if _count(limit) else 0,
        key=key if isinstance(key, str) else None,
        per_key=per_key if _count(per_key) else 0,
    )
    return limits if limits.any else None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_CAPACITY


def event_data(limits: Limits | None) -> dict[str, Any]:
    """A Created event's data for `limits`: nothing when there are none, so an ordinary history is what
    it always was."""
    if limits is None or not limits.any:
        return {}
    found: dict[str, Any] = {}
    if limits.limit:
        found["limit"] = limits.limit
    if limits.key is not None and limits.per_key:
        found["key"] = limits.key
        found["per_key"] = limits.per_key
    return {"concurrency": found}


def groups_of(flow_id: str, limits: Limits | None) -> list[tuple[Group, int]]:
    """The groups an execution of `flow_id` under `limits` belongs to, each with its capacity."""
    if limits is None:
        return []
    found = []
    if limits.limit:
        found.append((Group(flow_id), limits.limit))
    if limits.key is not None and limits.per_key:
        found.append((Group(flow_id, limits.key), limits.per_key))
    return found


def holds_slot(claimable: bool, claim_expiry: datetime | None, now: datetime) -> bool:
    """Whether a limited execution holds its slots at `now`: of a claimable status (`CLAIMABLE`) and under
    a live lease."""
    return claimable and claim_expiry is not None and claim_expiry > now


class Room:
    """One claim's accounting: the holders counted when it began, plus what it has taken since."""

    def __init__(self, holders: Iterable[Group] = ()) -> None:
        self.held: Counter[Group] = Counter(holders)

    def admit(self, flow_id: str, limits: Limits | None) -> bool:
        """Take the slots of an execution if every one of its groups has room; whether it did."""
        groups = groups_of(flow_id, limits)
        if any(self.held[group] >= capacity for group, capacity in groups):
            return False
        for group, _ in groups:
            self.held[group] += 1
        return True

    def full(self, flow_id: str, limits: Limits | None) -> tuple[Group, int] | None:
        """The first of an execution's groups with no room (with its capacity), None when all have."""
        for group, capacity in groups_of(flow_id, limits):
            if self.held[group] >= capacity:
                return group, capacity
        return None


def within_limits(
    ready: Sequence[ExecutionState],
    rows: Iterable[ExecutionState],
    now: datetime,
    claimable: Callable[[ExecutionState], bool],
) -> list[ExecutionState]:
    """The `ready` rows (in claim order) a claim may take: every unlimited one, and each limited one while
    its groups have room, counting the slots `rows` hold now and those taken before it in this claim (an
    in-memory store's decision, under its lock)."""
    if all(row.concurrency is None for row in ready):
        return list(ready)
    held = [
        group
        for row in rows
        if row.concurrency is not None and holds_slot(claimable(row), row.claim_expiry, now)
        for group, _ in groups_of(row.flow_id, row.concurrency)
    ]
    room = Room(held)
    return [row for row in ready if row.concurrency is None or room.admit(row.flow_id, row.concurrency)]


# ------------------------------------------------------------------------------------------ reads


@dataclass(frozen=True)
class Slotted:
    """What the reads need of one limited execution of a claimable status: whether it holds its slots
    now, whether it is queued (`filters.is_queued`), and its place in claim order."""

    execution_id: str
    flow_id: str
    limits: Limits
    holds: bool
    queued: bool
    priority: int
    created: datetime

    def order(self) -> tuple[int, datetime, str]:
        return (-self.priority, self.created, self.execution_id)


@dataclass(frozen=True)
class GroupCount:
    """One group now: its capacity (the largest its executions carry), the slots held, how many are queued
    and since when the oldest of them was created (None: none queued)."""

    group: Group
    capacity: int
    running: int
    queued: int
    oldest_queued: datetime | None


def group_counts(items: Iterable[Slotted], busiest: int = 10) -> list[GroupCount]:
    """Every workflow group, then the `busiest` key groups (most queued, then most running), by name."""
    capacity: Counter[Group] = Counter()
    running: Counter[Group] = Counter()
    queued: Counter[Group] = Counter()
    oldest: dict[Group, datetime] = {}
    for item in items:
        for group, cap in groups_of(item.flow_id, item.limits):
            capacity[group] = max(capacity[group], cap)
            running[group] += item.holds
            if item.queued:
                queued[group] += 1
                oldest[group] = min(oldest.get(group, item.created), item.created)
    found = [GroupCount(g, capacity[g], running[g], queued[g], oldest.get(g)) for g in capacity]
    flows = sorted((c for c in found if c.group.key is None), key=lambda c: c.group)
    keys = sorted(
        (c for c in found if c.group.key is not None), key=lambda c: (-c.queued, -c.running, c.group)
    )
    return flows + sorted(keys[: max(0, busiest)], key=lambda c: c.group)


def queue_of(execution_id: str, items: Sequence[Slotted]) -> Queued | None:
    """Where a queued execution stands: the first of its groups that is full (else its narrowest: its key's
    when it has one), with its position among that group's queued in claim order. None when it is not
    queued."""
    mine = next((item for item in items if item.execution_id == execution_id), None)
    if mine is None or not mine.queued:
        return None
    groups = groups_of(mine.flow_id, mine.limits)
    held: Counter[Group] = Counter()
    for item in items:
        if item.holds:
            held.update(group for group, _ in groups_of(item.flow_id, item.limits))
    group, capacity = next(((g, c) for g, c in groups if held[g] >= c), groups[-1])
    ahead = sum(
        1
        for item in items
        if item.queued
        and item.order() < mine.order()
        and group in (g for g, _ in groups_of(item.flow_id, item.limits))
    )
    return Queued(group, ahead + 1, capacity, held[group])


def queues_of(execution_ids: Iterable[str], items: Sequence[Slotted]) -> dict[str, Queued]:
    """`queue_of` for each of `execution_ids` over one read of `items`: the queued ones only."""
    found = {eid: queue_of(eid, items) for eid in dict.fromkeys(execution_ids)}
    return {eid: queued for eid, queued in found.items() if queued is not None}
