"""A long-running process's startup heap, kept out of the garbage collector's full passes.

A worker or console process imports Django, the flows and the console once: hundreds of thousands of
objects that live as long as the process. CPython's full collection (generation 2) walks every one of them
each time it runs, which on a busy process is every few seconds: 30–60 ms in a worker during W1, 100–150 ms
in the console's web process during W12, and the whole process stands still meanwhile (the collector holds
the GIL), every worker's node or every page's message waiting behind it. Frozen once the process is set
up, they move to the permanent generation, which no collection walks; what the process allocates later is
collected as before.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_heap"]


def freeze_startup_heap() -> int:
    """Freeze every object alive now (after collecting what startup left unreachable, which would
    otherwise be kept forever); answers how many objects are frozen in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
