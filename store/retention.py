"""Retention: which ended executions a purge may delete, and the purge done in small batches.

A purge deletes an ended execution (Completed, Failed or Cancelled: never one that can still run, and never
a Stopped one, which waits for a person) with everything that belongs to it: its events, fields, progress
marks and wait rows. "Older than" is measured on the execution's END: the row's `updated`, which a
terminal status freezes (I5: nothing is written to an ended row afterwards). Since an execution ends after
it was created, `created < ended_before` holds for every row a purge takes, and the stores use that bound to
select a batch from their creation-ordered indexes (no index holds `updated`: see store/django/models.py).

`purge` is the loop both the CLI (`flowdeck purge`) and the workers' retention chore run: batches of `batch`
executions, each one short store transaction (`FlowStore.purge_ended`), a pause of `pause` between
batches on the injected clock, until a batch comes back short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flowdeck.store import spi
from flowdeck.store.clock import Clock

__all__ = ["ENDED", "Purge", "ended_kinds", "kind_of", "purge", "purgeable"]

# The status kinds (`spi.status_to_json(...)["type"]`) a purge may delete, in the order it takes them.
ENDED = ("completed", "failed", "cancelled")


def ended_kinds(statuses: Iterable[str] | None) -> tuple[str, ...]:
    """The status kinds asked for, checked: every ended kind when none is given; ValueError naming any
    kind that is not an ended one (a purge never touches an execution that can still run)."""
    asked = tuple(dict.fromkeys(s.strip().lower() for s in statuses or ()))
    wrong = [s for s in asked if s not in ENDED]
    if wrong:
        named = ", ".join(map(repr, wrong))
        raise ValueError(f"only ended executions are purged: {named} is not one of {', '.join(ENDED)}")
    return tuple(k for k in ENDED if k in asked) if asked else ENDED


def kind_of(status: spi.Status) -> str:
    """A status's kind: the `type` of its JSON (`completed`, `stopped`, ...)."""
    return str(spi.status_to_json(status)["type"])


def purgeable(
    row: spi.ExecutionState, ended_before: datetime, kinds: Iterable[str], workflow_id: str | None
) -> bool:
    """Whether a purge of `kinds` ended before `ended_before` (of `workflow_id` when given) takes `row`."""
    return (
        row.status.terminal
        and kind_of(row.status) in kinds
        and row.updated < ended_before
        and (workflow_id is None or row.flow_id == workflow_id)
    )


@dataclass(frozen=True)
class Purge:
    """What one purge deletes: ended executions of `statuses` (every ended kind when empty) that ended
    before `ended_before`, of `workflow_id` when given."""

    ended_before: datetime
    statuses: tuple[str, ...] = ()
    workflow_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "statuses", ended_kinds(self.statuses))


async def purge(
    store: spi.FlowStore,
    what: Purge,
    *,
    batch: int,
    pause: timedelta,
    clock: Clock,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Delete what `what` names, `batch` executions per store transaction, pausing `pause` (on `clock`)
    between batches so that no lock is held long and other writers get their turn; answers how many went.
    `progress(batch_deleted, total_so_far)` is called after each batch."""
    if batch < 1:
        raise ValueError(f"a purge batch is at least 1 execution (got {batch})")
    total = 0
    while True:
        deleted = await store.purge_ended(
            ended_before=what.ended_before, statuses=what.statuses, workflow_id=what.workflow_id, limit=batch
        )
        total += deleted
        if progress is not None:
            progress(deleted, total)
        if deleted < batch:
            return total
        await clock.sleep(pause.total_seconds())
