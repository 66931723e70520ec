"""What a page hears of the live feed's reads: the events (`LiveEvent`), and the batch saying a read's
events to every page of one scope, encoded once (`LiveBatch`)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from flowdeck.store import feed as store_feed

__all__ = ["EVERYTHING", "LiveBatch", "LiveEvent", "Scope", "batch_json", "changes_json", "in_scope"]


class LiveEvent(NamedTuple):
    """What a page hears: which execution changed, and how (the event's id, seq and kind). A tuple of
    strings and numbers: a busy engine's thousands a second cost the web process little to make, and the
    garbage collector stops tracking them at its first pass, so they never swell the full passes that stop
    the whole process (W12)."""

    id: int
    execution_id: str
    workflow_id: str
    seq: int
    kind: str

    @classmethod
    def of(cls, event: store_feed.FeedEvent) -> LiveEvent:
        return cls(event.id, event.execution_id, event.workflow_id, event.seq, event.kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "event",
            "id": self.id,
            "execution_id": self.execution_id,
            "workflow_id": self.workflow_id,
            "seq": self.seq,
            "kind": self.kind,
        }


Scope = tuple[str | None, str | None]
"""What a page watches: (execution id, workflow id); (None, None) for everything."""

EVERYTHING: Scope = (None, None)


def in_scope(scope: Scope, event: LiveEvent) -> bool:
    execution_id, workflow_id = scope
    if execution_id is not None:
        return event.execution_id == execution_id
    if workflow_id is not None:
        return event.workflow_id == workflow_id
    return True


@dataclass(frozen=True)
class LiveBatch:
    """The events a page wants of one read, and the message saying them, encoded once for every page of
    the same scope. A page of one execution hears each event (`{"type": "events", "events": [...]}`,
    each saying `progress_follows`: the execution's progress comes after them). A page of many executions
    (the list, a workflow's page) only refreshes when it hears of a change, so it hears the reads since its
    last batch as their ids, in runs (`{"type": "changes", "ids": [[first, last], ...], "last": N}`): a
    busy engine's thousands of events a second cost it a few bytes, not a JSON object each."""

    ids: tuple[int, ...]
    text: str
    lowest: int  # the smallest id: a page compares it once, not each event
    events: tuple[LiveEvent, ...] = ()  # a page of one execution's; a summary names the ids alone

    @classmethod
    def of(cls, events: Sequence[LiveEvent]) -> LiveBatch:
        """A page of one execution's batch: its events."""
        ids = tuple(event.id for event in events)
        return cls(ids, json.dumps(batch_json(events, progress_follows=True)), min(ids), tuple(events))

    @classmethod
    def changes(cls, ids: Sequence[int]) -> LiveBatch:
        """A page of many executions' batch: the ids of the events since its last."""
        return cls(tuple(ids), json.dumps(changes_json(ids)), min(ids))

    def message_without(self, ids: Collection[int]) -> dict[str, Any] | None:
        """The message saying this batch's events but `ids`, the way the batch says them; None if none
        is left."""
        if self.events:
            events = [event for event in self.events if event.id not in ids]
            return batch_json(events, progress_follows=True) if events else None
        fresh = [event_id for event_id in self.ids if event_id not in ids]
        return changes_json(fresh) if fresh else None


def changes_json(ids: Iterable[int]) -> dict[str, Any]:
    runs: list[list[int]] = []
    for event_id in sorted(ids):
        if runs and event_id == runs[-1][1] + 1:
            runs[-1][1] = event_id
        else:
            runs.append([event_id, event_id])
    return {"type": "changes", "ids": runs, "last": runs[-1][1] if runs else 0}


def batch_json(events: Iterable[LiveEvent], *, progress_follows: bool = False) -> dict[str, Any]:
    said = [event.to_json() for event in events]
    if progress_follows:
        for item in said:
            item["progress_follows"] = True
    return {"type": "events", "events": said}
