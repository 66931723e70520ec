"""A small layered left-to-right layout, for formats that must carry their own coordinates (BPMN DI).

Ranks are longest paths from the sources; within a rank nodes sit at the barycentre of their
predecessors (ties in plan order); each column is centred on the tallest one. Enough for the chains,
forks and joins a flow makes; no crossing minimisation beyond that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GAP_X", "Box", "Layout", "layered", "waypoints"]

GAP_X = 60
GAP_Y = 40


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float

    def moved(self, dx: float, dy: float) -> Box:
        return Box(self.x + dx, self.y + dy, self.width, self.height)


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]
    width: float
    height: float


def _ranks(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    preds: dict[str, list[str]] = {i: [] for i in ids}
    for source, target in edges:
        if source != target:
            preds[target].append(source)
    ranks: dict[str, int] = {}

    def rank(node: str, seen: frozenset[str]) -> int:
        if node not in ranks:
            # A cycle cannot come from a flow (back edges are left out), but never loop forever on one.
            ranks[node] = 1 + max((rank(p, seen | {node}) for p in preds[node] if p not in seen), default=-1)
        return ranks[node]

    for node in ids:
        rank(node, frozenset())
    return ranks


def layered(
    ids: Sequence[str], sizes: dict[str, tuple[float, float]], edges: Sequence[tuple[str, str]]
) -> Layout:
    """Positions (relative to the top-left corner) for `ids`, sized `sizes`, joined by `edges`."""
    if not ids:
        return Layout({}, 0, 0)
    ranks = _ranks(ids, edges)
    order = {node: i for i, node in enumerate(ids)}
    columns: list[list[str]] = [[] for _ in range(max(ranks.values()) + 1)]
    for node in ids:
        columns[ranks[node]].append(node)
    row: dict[str, float] = {}
    for column in columns:

        def barycentre(node: str) -> tuple[float, int]:
            before = [row[s] for s, t in edges if t == node and s in row]
            return (sum(before) / len(before) if before else order[node], order[node])

        column.sort(key=barycentre)
        for i, node in enumerate(column):
            row[node] = i
    heights = [sum(sizes[n][1] for n in col) + GAP_Y * (len(col) - 1) for col in columns]
    widths = [max(sizes[n][0] for n in col) for col in columns]
    tallest = max(heights)
    boxes: dict[str, Box] = {}
    x = 0.0
    for column, width, height in zip(columns, widths, heights, strict=True):
        y = (tallest - height) / 2
        for node in column:
            w, h = sizes[node]
            boxes[node] = Box(x + (width - w) / 2, y, w, h)
            y += h + GAP_Y
        x += width + GAP_X
    return Layout(boxes, x - GAP_X, tallest)


def _crosses(y: float, x0: float, x1: float, boxes: Sequence[Box]) -> bool:
    low, high = min(x0, x1), max(x0, x1)
    return any(b.y - 4 <= y <= b.y + b.height + 4 and b.x < high and b.x + b.width > low for b in boxes)


def waypoints(source: Box, target: Box, obstacles: Sequence[Box] = ()) -> list[tuple[int, int]]:
    """An orthogonal route from the right of `source` to the left of `target` that passes behind none of
    `obstacles`: the turn near the target, else near the source, else over the top of everything between."""
    sx, sy = source.x + source.width, source.y + source.height / 2
    tx, ty = target.x, target.y + target.height / 2
    if round(sy) == round(ty) and not _crosses(sy, sx, tx, obstacles):
        points = [(sx, sy), (tx, ty)]
    else:
        late = max(sx + GAP_X / 4, tx - GAP_X / 2)
        early = min(sx + GAP_X / 2, tx - GAP_X / 4)
        if not _crosses(sy, sx, late, obstacles):
            points = [(sx, sy), (late, sy), (late, ty), (tx, ty)]
        elif not _crosses(ty, early, tx, obstacles):
            points = [(sx, sy), (early, sy), (early, ty), (tx, ty)]
        else:
            between = [b for b in obstacles if b.x < late and b.x + b.width > early]
            lane = min([source.y, target.y, *(b.y for b in between)]) - GAP_Y / 2
            points = [(sx, sy), (early, sy), (early, lane), (late, lane), (late, ty), (tx, ty)]
    return [(round(px), round(py)) for px, py in points]
