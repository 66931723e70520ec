"""The threads that run sync bodies, so that a body that blocks never blocks the event loop.

`asyncio.to_thread` did this before, through the loop's default `ThreadPoolExecutor`: per call a work
item, the executor's condition and semaphore, a concurrent future wrapped into an asyncio future and the
two chained by callbacks. For a body that takes microseconds that plumbing was the larger part of the
hop (bench/PROFILE.md, issue 16). Here a call puts one tuple on a `SimpleQueue` and a thread answers the
asyncio future directly with `call_soon_threadsafe`: the one wake-up of the loop a hop cannot avoid.

The same promises as `to_thread`: the body runs in a copy of the caller's context (context variables
reach it), outside the loop's thread (so Django's ORM may be used from it), and a caller that stops
waiting (a timeout, a cancelled attempt) abandons the thread to finish on its own; its answer is then
dropped. Threads are started when no thread is idle, up to a bound (`limit`; `runworkers` sets it to its
attempt slots, since each thread that uses the ORM keeps a database connection of its own), and stay for
the process's life; they are daemons, so a body blocked forever does not hold the process open at exit. A
forked child inherits none of them and starts its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["limit", "run_in_thread"]

_bound = 32
"""Bodies blocked at once beyond this wait for a thread (the engine's default attempt slots are 32)."""

_Job = tuple[
    asyncio.AbstractEventLoop, asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]
]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
# Counted on the loops' threads only (a body thread just takes jobs and posts answers), so the lock is
# never contended with a body thread: jobs handed out and not yet answered, and threads started.
_lock = threading.Lock()
_outstanding = 0
_started = 0


def _after_fork_in_child() -> None:
    """A forked child inherits the counts but none of the threads (nor a sane lock): it starts afresh."""
    global _jobs, _lock, _outstanding, _started
    _jobs, _lock = queue.SimpleQueue(), threading.Lock()
    _outstanding = _started = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def limit(threads: int) -> None:
    """Run sync bodies on at most `threads` threads from now on (threads already started stay)."""
    global _bound
    _bound = max(1, threads)


def run_in_thread(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """`fn(*args)` on a body thread; the future answers its result or its exception."""
    global _outstanding, _started
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    with _lock:
        _outstanding += 1
        # a thread for every job not yet answered (each runs one at a time), up to the bound
        start = _outstanding > _started and _started < _bound
        if start:
            _started += 1
            name = f"flowdeck:body:{_started}"
    _jobs.put((loop, future, contextvars.copy_context(), fn, args))
    if start:
        threading.Thread(target=_serve, name=name, daemon=True).start()
    return future


def _serve() -> None:
    while True:
        loop, future, context, fn, args = _jobs.get()
        try:
            result = context.run(fn, *args)
        except BaseException as error:  # handed to the awaiting task, as to_thread does
            _answer(loop, _fail, future, error)
        else:
            _answer(loop, _succeed, future, result)
        del loop, future, context, fn, args


def _answer(loop: asyncio.AbstractEventLoop, how: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(how, *args)
    except RuntimeError:  # the loop closed while the body ran: nobody waits any more
        _answered()


def _answered() -> None:
    global _outstanding
    with _lock:
        _outstanding -= 1


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    _answered()
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    _answered()
    if not future.done():
        future.set_exception(error)
