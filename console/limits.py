"""Concurrency limits as every surface shows them (`store.concurrency`): an execution's limits and, when it
is queued, where it stands, in one set of words for the execution page, REST, the CLI and the Limits page."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from flowdeck.console import runtime, states
from flowdeck.store import concurrency, spi

__all__ = [
    "alimits",
    "aqueue_of",
    "aqueues_of",
    "count_json",
    "group_text",
    "limits_text",
    "queue_for",
    "queue_json",
    "queue_line",
    "queues_for",
    "wait_text",
]


def limits_text(limits: concurrency.Limits | None) -> str:
    """`2 running of its workflow; 1 per key 42` (empty: no limits)."""
    if limits is None:
        return ""
    parts = [f"{limits.limit} running of its workflow"] if limits.limit else []
    if limits.key is not None and limits.per_key:
        parts.append(f"{limits.per_key} per key {limits.key}")
    return "; ".join(parts)


def group_text(group: concurrency.Group) -> str:
    """A limit by name: the workflow's, or one key's of it (`fulfilment · key 42`)."""
    return group.flow_id if group.key is None else f"{group.flow_id} · key {group.key}"


def queue_line(queued: concurrency.Queued) -> str:
    """`#3 in line for fulfilment · key 42 (1 of 1 running)`."""
    held = f"{queued.running} of {queued.capacity} running"
    return f"#{queued.position} in line for {group_text(queued.group)} ({held})"


def wait_text(since: datetime | None, now: datetime) -> str:
    """How long the oldest queued has waited (`4m 12s`; empty when none is queued)."""
    if since is None:
        return ""
    seconds = max(0, int((now - since).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02}m"
    return f"{minutes}m {seconds:02}s" if minutes else f"{seconds}s"


async def queue_for(
    store: spi.FlowStore, state: spi.ExecutionState, served: frozenset[str]
) -> concurrency.Queued | None:
    """Where the execution stands in its limit's line, when its state is `queued` (one read; none else)."""
    if states.standing_of(state, served).state is not states.ExecState.QUEUED:
        return None
    return await store.queue_of(state.execution_id)


async def queues_for(
    store: spi.FlowStore, items: Iterable[spi.ExecutionState], served: frozenset[str]
) -> Mapping[str, concurrency.Queued]:
    """Where each queued execution of a list page stands, by id: one read, and none when no row is queued
    (the console's list, REST's list and search, `flowdeck ls`)."""
    queued = states.ExecState.QUEUED
    ids = [s.execution_id for s in items if states.standing_of(s, served).state is queued]
    return await store.queues_of(ids) if ids else {}


def queue_json(queued: concurrency.Queued | None) -> dict[str, Any] | None:
    """Where a queued execution stands, as `flowdeck ls --json` and `show --json` carry it (REST: `queue`)."""
    if queued is None:
        return None
    group = queued.group
    return {
        "workflow_id": group.flow_id,
        "key": group.key,
        "position": queued.position,
        "capacity": queued.capacity,
        "running": queued.running,
        "text": queue_line(queued),
    }


def count_json(count: concurrency.GroupCount, now: datetime) -> dict[str, Any]:
    """One limit now as REST and `flowdeck limits --json` carry it."""
    oldest = count.oldest_queued
    return {
        "workflowId": count.group.flow_id,
        "key": count.group.key,
        "capacity": count.capacity,
        "running": count.running,
        "queued": count.queued,
        "oldestQueued": oldest.isoformat() if oldest is not None else None,
        "oldestQueuedWaitSeconds": (now - oldest).total_seconds() if oldest is not None else None,
    }


async def alimits(workflow_id: str | None = None, busiest: int = 10) -> list[concurrency.GroupCount]:
    """Each concurrency limit with work now (per workflow, then the `busiest` keys): running, queued and
    the oldest queued's creation (`flowdeck.store.concurrency`). The client's `alimits`."""
    return list(await (await runtime.engine()).store.limit_counts(workflow_id, busiest))


async def aqueue_of(execution_id: str) -> concurrency.Queued | None:
    """Where a queued execution stands in its limit's line (None when it is not queued). The client's."""
    return await (await runtime.engine()).store.queue_of(execution_id)


async def aqueues_of(execution_ids: Iterable[str]) -> dict[str, concurrency.Queued]:
    """Where each queued one of `execution_ids` stands, by id, in one read (the others absent): the
    client's."""
    return dict(await (await runtime.engine()).store.queues_of(list(execution_ids)))
