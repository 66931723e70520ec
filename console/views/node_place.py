"""Which place of the plan a node panel shows, and what of the record under its durable path is that
place's own.

A race's arms may all produce `decision`: three places, one durable path, one record. The progress
(engine/progress.py) hands each fact of a shared path to the place it belongs to (`NodeProgress.recorded`);
here the panel follows it: a place that never ran shows no attempts or value of another's, and one whose
facts are a failure shows the failed attempts while the place that completed shows the completion. A key
that names the path alone (a link from the timeline, say) opens the place the record belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flowdeck.console.views.node_record import Attempt
from flowdeck.engine import places
from flowdeck.engine.progress import NodeProgress, NodeStatus, Progress

__all__ = ["Other", "Placed", "placed"]

# The states of a place that holds its path's completion (and so its value)
_DONE = frozenset({NodeStatus.COMPLETED, NodeStatus.WON, NodeStatus.ANSWERED, NodeStatus.COMPENSATED})


@dataclass(frozen=True)
class Other:
    """Another place carrying the same durable path: its key, branch words and state."""

    key: str
    branch: str
    status: str
    recorded: bool


@dataclass(frozen=True)
class Placed:
    """The panel's place: its progress `entry` (None when no progress is known), the branch words that
    tell it apart, whether the record under the path is its own, and the path's other places."""

    entry: NodeProgress | None
    branch: str = ""
    recorded: bool = True
    others: tuple[Other, ...] = ()

    @property
    def holds_completion(self) -> bool:
        """Is the path's completion (and so its recorded value) this place's?"""
        if not self.recorded:
            return False
        return self.entry is None or not self.entry.shared or self.entry.status in _DONE

    def own(self, attempts: Sequence[Attempt]) -> list[Attempt]:
        """The attempts that are this place's: all of them unless another place shares the record; then
        the completed ones for the place that completed, the others for the place that failed or runs."""
        if not self.recorded:
            return []
        if not any(o.recorded for o in self.others):
            return list(attempts)
        done = self.holds_completion
        return [a for a in attempts if (a.outcome == "completed") == done]


def placed(progress: Progress | None, selection: places.Selection, words: Mapping[str, str]) -> Placed:
    """The place `selection` opens, told apart from the path's other places by `words` (branch words)."""
    if progress is None:
        return Placed(None)
    at = [n for n in progress.nodes if n.name == selection.path]
    if selection.place:
        entry = next((n for n in at if n.place == selection.place), None)
    else:
        entry = next((n for n in at if n.recorded), at[0] if at else None)
    if entry is None or not entry.shared:
        return Placed(entry)
    others = tuple(
        Other(places.key_of(n.name, n.place), words.get(n.place, ""), n.status.value, n.recorded)
        for n in at
        if n.place != entry.place
    )
    return Placed(entry, words.get(entry.place, ""), entry.recorded, others)
