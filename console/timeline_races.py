"""A race's arms on the waterfall as the diagram paints them (engine/progress.py, engine/node_status.py):
the history alone cannot tell a refused or overtaken arm from a failed node, the execution's progress
can. Pure, like `flowdeck.console.timeline`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from flowdeck.console.timeline import Bar, Timeline

__all__ = ["settle_races"]

# what an arm's bar says when the race went to another arm: refused, abandoned, still open (its wait
# row not yet retired when the progress already says the race is decided), or cut by a later stop (the
# race was decided before the execution stopped, so the arm lost; it was not interrupted)
_LOSABLE = frozenset(
    {"failed", "abandoned", "retried", "timed-out", "sleeping", "waiting", "running", "interrupted"}
)


def settle_races(tl: Timeline, statuses: Mapping[str, Collection[str]]) -> Timeline:
    """The race arms as the diagram paints them (engine/progress.py): `statuses` maps a durable path to
    the statuses of the places that share it. On a path with a lost place, an attempt that failed (or a
    wait or sleep abandoned when another arm won) is `lost`, not failed; on a path with a won place, the
    completed attempt is `won`. A path whose places all failed keeps its failures: the race failed."""
    lanes = []
    for lane in tl.lanes:
        said = set(statuses.get(lane.name, ()))
        if not said & {"won", "lost"}:
            lanes.append(lane)
            continue
        bars = tuple(_raced(bar, said) for bar in lane.bars)
        lanes.append(replace(lane, bars=bars))
    return replace(tl, lanes=tuple(lanes))


def _raced(bar: Bar, said: set[str]) -> Bar:
    if bar.kind == "backoff":
        return bar
    if "lost" in said and bar.outcome in _LOSABLE:
        return replace(bar, outcome="lost")
    if "won" in said and bar.outcome == "completed":
        return replace(bar, outcome="won")
    return bar
