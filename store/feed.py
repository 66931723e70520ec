"""The event feed: every stored event in one order (its id), for readers that follow the whole store.

A page of the console follows the executions it shows by asking for the events after the last id it saw
(`FlowStore.events_after`). Ids grow in insert order, but on a database they are taken at insert and seen
at commit, so a reader may see id 12 before id 11 commits: it keeps the ids it skipped and asks for them
again (`gaps`) for a while.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BATCH", "FeedEvent"]

BATCH = 1000  # the events one read answers at most, unless asked for fewer


@dataclass(frozen=True)
class FeedEvent:
    """One stored event as the feed names it: its id, its execution and workflow, its seq and kind."""

    id: int
    execution_id: str
    workflow_id: str
    seq: int
    kind: str
