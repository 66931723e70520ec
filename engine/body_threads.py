"""The threads that run sync bodies, so that a body that blocks never blocks the event loop.

`asyncio.to_thread` did this before, through the loop's default `ThreadPoolExecutor`: per call a work
item, the executor's condition and semaphore, a concurrent future wrapped into an asyncio future and the
two chained by callbacks. For a body that takes microseconds that plumbing was the larger part of the
hop (bench/PROFILE.md, issue 16). Here a call puts one tuple on a `SimpleQueue` and a thread answers the
asyncio future directly with `call_soon_threadsafe`: the one wake-up of the loop a hop cannot avoid.

The same promises as `to_thread`: the body runs in a copy of the caller's context (context variables
reach it), outside the loop's thread (so Django's ORM may be used from it), and a caller that stops
waiting (a timeout, a cancelled attempt) abandons the thread to finish on its own; its answer is then
dropped. Threads are started when no thread is idle, up to a bound (`limit`; `flowdeck_workers` sets it to its
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

__all__ = ["limit", "prepare_threads", "recover_threads", "run_in_thread"]

_bound = 32
"""Bodies blocked at once beyond this wait for a thread (the engine's default attempt slots are 32)."""

_Job = tuple[
    asyncio.AbstractEventLoop, asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...]
]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
# Counted on the loops' threads only (a body thread just takes jobs and posts answers, and reads the
# preparations only after they changed), so the lock is hardly ever contended with a body thread: jobs
# handed out and not yet answered, threads started, and the preparations.
_lock = threading.Lock()
_outstanding = 0
_started = 0


def _after_fork_in_child() -> None:
    """A forked child inherits the counts but none of the threads (nor a sane lock): it starts afresh."""
    global _jobs, _lock, _outstanding, _started
    _jobs, _lock = queue.SimpleQueue(), threading.Lock()
    _outstanding = _started = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


_setups: dict[str, Callable[[], None]] = {}
_generation = 0  # bumped by each `prepare_threads`: a thread whose preparation is older runs them again


def prepare_threads(name: str, setup: Callable[[], None] | None) -> Callable[[], None] | None:
    """Run `setup` on every body thread before its next body, in place of the setup of the same name (None
    drops it); answers the one it replaced. A composition root's per-thread preparation, such as the Django
    store marking the thread so that its connections to the store's database are made safe."""
    global _generation
    with _lock:
        replaced = _setups.pop(name, None)
        if setup is not None:
            _setups[name] = setup
        _generation += 1
    return replaced


_recoveries: dict[str, Callable[[], None]] = {}


def recover_threads(name: str, recover: Callable[[], None] | None) -> Callable[[], None] | None:
    """Run `recover` on a body thread right after a body of it raised, in place of the one of the same name
    (None drops it); answers the one it replaced. A composition root's repair of what the failure may have
    left broken on that thread, such as a database connection the server ended (a failover): Django
    reopens a thread's connection only once it is closed, and nothing else on a body thread closes it."""
    with _lock:
        replaced = _recoveries.pop(name, None)
        if recover is not None:
            _recoveries[name] = recover
    return replaced


def _recover() -> None:
    with _lock:
        recoveries = list(_recoveries.values())
    for recover in recoveries:
        try:
            recover()
        except Exception:  # a repair that fails leaves the next body to meet the same failure, and say so
            continue


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
    prepared = -1
    while True:
        loop, future, context, fn, args = _jobs.get()
        try:
            if prepared != _generation:  # one comparison per body; the setups run when they changed
                prepared = _prepare()
            result = context.run(fn, *args)
        except BaseException as error:  # handed to the awaiting task, as to_thread does
            _recover()
            _answer(loop, _fail, future, error)
        else:
            _answer(loop, _succeed, future, result)
        del loop, future, context, fn, args


def _prepare() -> int:
    with _lock:
        generation, setups = _generation, list(_setups.values())
    for setup in setups:
        setup()
    return generation


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
