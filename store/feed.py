"""The event feed: every stored event in one order (its id), for readers that follow the whole store.

A page of the console follows the executions it shows by asking for the events after the last id it saw
(`FlowStore.events_after`). Ids grow in insert order, but on a database they are taken at insert and seen
at commit, so a reader may see id 12 before id 11 commits: it keeps the ids it skipped and asks for them
again (`gaps`) for a while.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["BATCH", "FeedEvent"]

BATCH = 1000  # the events one read answers at most, unless asked for fewer


@dataclass(frozen=True)
class FeedEvent:
    """One stored event as the feed names it: its id, its execution and workflow, its seq and kind; and
    when it happened and its payload (`Event.timestamp`, `Event.data`), which a reader folding the feed
    into numbers (the metrics, `flowdeck.console.metrics`) reads."""

    id: int
    execution_id: str
    workflow_id: str
    seq: int
    kind: str
    timestamp: datetime | None = field(default=None, compare=False)
    data: Mapping[str, Any] = field(default_factory=dict, compare=False)
