"""A long-running process's startup heap, kept out of the garbage collector's full passes.

A worker or console process imports Django, the flows and the console once: hundreds of thousands of
objects that live as long as the process. CPython's full collection (generation 2) walks every one of them
each time it runs, which on a busy process is every few seconds: 30–60 ms in a worker during W1, 100–150 ms
in the console's web process during W12, and the whole process stands still meanwhile (the collector holds
the GIL), every worker's node or every page's message waiting behind it. Frozen once the process is set
up, they move to the permanent generation, which no collection walks; what the process allocates later is
collected as before.

A worker also spaces its young collections (`widen_young_generation`). CPython collects the young
generation every 700 net allocations of tracked objects, every tenth young pass walks the middle generation
too and every tenth of those the old one, so the passes over what outlives a node follow what the process
allocates. A traced node (OpenTelemetry's SDK: the span, its attributes, events, links, the copy its
processor queues) allocates about as many such objects again as the engine's own, held until the exporter
has them: with the SDK on, the collector's CPU in a W1 worker went from about 7 to about 30 µs a node on a
busy machine, and to about 15 at 10,000 (`bench/PROFILE.md`, seventh pass). The passes are fewer and each
walks more young objects; what is garbage at once never reaches them (reference counting frees it).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "freeze_startup_heap", "widen_young_generation"]

YOUNG_THRESHOLD = 10_000
"""A worker's net allocations of tracked objects between two young collections (CPython's default: 700)."""


def freeze_startup_heap() -> int:
    """Freeze every object alive now (after collecting what startup left unreachable, which would
    otherwise be kept forever); answers how many objects are frozen in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def widen_young_generation(threshold: int = YOUNG_THRESHOLD) -> None:
    """Collect the young generation every `threshold` net allocations instead of CPython's default (the
    older generations' thresholds as they are); never narrower than it already is, and a threshold of 0
    (automatic collection turned off) stays off."""
    young, *older = gc.get_threshold()
    if young:
        gc.set_threshold(max(young, threshold), *older)
