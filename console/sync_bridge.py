"""The client's sync bridge: its synchronous calls run their async twins on one event loop per process (a
portal on a daemon thread), refused from a running loop and, where it would deadlock, inside the caller's
transaction. `flowdeck.console.client` is the facade; this is the machinery beneath its blocking calls.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from flowdeck.console import runtime
from flowdeck.engine import errors

__all__ = [
    "FlowInTransaction",
    "FlowSyncInAsyncContext",
    "blocking_read",
    "no_running_loop",
    "read_one",
    "read_only",
    "run",
]

T = TypeVar("T")


class FlowSyncInAsyncContext(errors.FlowError, RuntimeError):
    """A synchronous client call was made from a thread running an event loop: await its async twin."""

    def __init__(self, call: str) -> None:
        super().__init__(
            f"flowdeck.console.client.{call}() was called from a running event loop, which it would block; "
            f"use `await client.a{call}(...)` there"
        )
        self.call = call


class FlowInTransaction(errors.FlowError):
    """This call cannot run inside the caller's transaction on the store's database."""

    def __init__(self, call: str, why: str) -> None:
        super().__init__(
            f"flowdeck.console.client.{call}() cannot run inside transaction.atomic() here: {why}"
        )
        self.call = call


def blocking_read(call: str, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """A read of another surface (the tasks backend's `get_result`) run as this module's reads run: on
    the portal, refused from a running loop and inside a transaction on the store's SQLite database."""
    read_only(call)
    return run(make)


def no_running_loop(call: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise FlowSyncInAsyncContext(call)


def read_only(call: str) -> runtime.CallerTransaction | None:
    """A read inside the caller's transaction runs on the store's own connections: fine on PostgreSQL (it
    answers the caller's transaction, if any); on SQLite it would wait for the write lock that transaction
    holds, so it is refused at once."""
    no_running_loop(call)
    joined = runtime.caller_transaction()
    if joined is not None and joined.vendor == "sqlite":
        raise FlowInTransaction(
            call,
            "on SQLite the store reads under the write lock your transaction holds; "
            "call it after the commit (transaction.on_commit) or outside the atomic block",
        )
    return joined


def read_one(call: str, execution_id: str, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """A read of one execution; one that only the caller's open transaction holds (started in it) is not
    "not found": it is not committed yet, and says so."""
    joined = read_only(call)
    try:
        return run(make)
    except errors.FlowExecutionNotFound:
        if joined is not None and joined.get_execution(execution_id) is not None:
            raise FlowInTransaction(
                call, f"execution {execution_id!r} was started in your open transaction: commit it first"
            ) from None
        raise


class _Portal:
    """One event loop on a daemon thread, where the synchronous calls run their async twins. The store's
    async connections (PostgreSQL's group commit) belong to the loop that opened them, so one long-lived
    loop keeps them from call to call where `asyncio.run` per call would open new ones each time."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="flowdeck-client", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        # The task runs in a copy of the caller's context (`call_soon_threadsafe` copies it in this thread),
        # so a start from a traced view keeps the view's span current: test_client_tracing checks it.
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # interrupted (KeyboardInterrupt): stop the work rather than leave it running
            raise


_portal: _Portal | None = None
_portal_lock = threading.Lock()


def run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make` builds on this process's portal (one per process: a forked child, whose
    parent's loop thread did not come along, starts its own)."""
    global _portal
    with _portal_lock:
        if _portal is None or _portal.pid != os.getpid():
            _portal = _Portal()
        portal = _portal
    return portal.run(make())
