"""The event loop a worker process runs on: uvloop where it is installed, else asyncio's own.

A worker's loop does the same few things thousands of times a second: a socket made ready, a future
answered from a body thread, a task stepped. uvloop does those in C; in W1 it took a sixth off the worker
process's CPU per node (bench/RESULTS.md, issue 16). Nothing in the engine depends on which loop runs it,
and the test suite runs on asyncio's. `FLOWDECK_EVENT_LOOP=asyncio` keeps asyncio's loop (for a debugger
or a profiler that knows only that one).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["loop_factory", "run"]

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when it is installed and not turned off; None: asyncio's default."""
    if os.environ.get("FLOWDECK_EVENT_LOOP", "").lower() == "asyncio":
        return None
    if importlib.util.find_spec("uvloop") is None:
        return None
    import uvloop

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the loop `loop_factory` picks."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
