"""The console's live feed: ONE store watcher per server process, fanned out to every open page.

Workers run in other processes, so the web process learns of their commits from the store. A single thread
per process, on an event loop of its own, reads the store's feed ("events after the last id seen",
`FlowStore.events_after`) and hands each new event to every subscriber (a websocket consumer) on the
subscriber's own event loop. Between reads it waits on `FlowStore.wait_for_change` for at most
`POLL_SECONDS`: on PostgreSQL the Django store's LISTEN connection ends that wait at once for a signal, a
start or a cancel from another process; every other write is caught by the next read, at most
`POLL_SECONDS` later. On SQLite it reads every `POLL_SECONDS` (a primary-key range read, cheap). However
many pages are open, there is one watcher on one store of its own (`runtime.open_store`).

Ids are taken at insert and visible at commit, so a read can see id 12 before id 11 commits. Ids skipped
over are kept as gaps and asked for again for `GAP_SECONDS` (then given up as rolled back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from console import runtime
from store import feed as store_feed
from store import spi

__all__ = ["Feed", "LiveEvent", "Subscription", "events_after", "exists", "feed", "latest_event_id"]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
GAP_SECONDS = 10.0
BATCH = store_feed.BATCH


@dataclass(frozen=True)
class LiveEvent:
    """What a page hears: which execution changed, and how (the event's id, seq and kind)."""

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


async def events_after(
    after: int, *, execution_id: str | None = None, workflow_id: str | None = None, limit: int = BATCH
) -> list[LiveEvent]:
    """Events above id `after` (of one execution or workflow), oldest first: what a reconnecting page
    missed."""
    found = await feed().store.events_after(
        after, execution_id=execution_id, workflow_id=workflow_id, limit=limit
    )
    return [LiveEvent.of(event) for event in found]


async def exists(*, execution_id: str | None = None, workflow_id: str | None = None) -> bool:
    """Whether the execution, or an execution of the workflow, is stored."""
    store = feed().store
    if execution_id is not None:
        return await store.get_execution(execution_id) is not None
    return bool((await store.list_executions(workflow_id, None, 1)).items)


async def latest_event_id() -> int:
    """The newest event's id: a page rendered now asks the feed for what comes after it."""
    return await feed().store.latest_event_id()


class Subscription:
    """One page's share of the feed: an asyncio queue on the page's loop, filled by the watcher thread."""

    def __init__(self, feed: Feed, wants: Callable[[LiveEvent], bool]) -> None:
        self._feed = feed
        self.wants = wants
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[LiveEvent] = asyncio.Queue()

    def offer(self, event: LiveEvent) -> None:
        if self.wants(event):
            with contextlib.suppress(RuntimeError):  # the page's loop closed: it is leaving anyway
                self.loop.call_soon_threadsafe(self.queue.put_nowait, event)

    def close(self) -> None:
        self._feed.unsubscribe(self)


class Feed:
    """The process's watcher thread (started by the first subscriber) and its subscribers."""

    def __init__(self, store: spi.FlowStore) -> None:
        self.store = store
        self.cursor = 0  # the highest id read so far
        self.watchers_started = 0
        self._gaps: dict[int, float] = {}
        self._subscribers: set[Subscription] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------------- subscribers

    def subscribe(self, wants: Callable[[LiveEvent], bool] = lambda event: True) -> Subscription:
        """A subscription on the running loop; starts the watcher if it is not running yet."""
        subscription = Subscription(self, wants)
        with self._lock:
            self._subscribers.add(subscription)
            self._start_locked()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """True once the watcher has read its starting point (tests wait for it)."""
        return self._ready.wait(timeout)

    def _start_locked(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="flowdeck-console-live", daemon=True)
        self.watchers_started += 1
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5)
        self._thread = None
        self._ready.clear()

    def close(self) -> None:
        """Stop the watcher and release the feed's store."""
        self.stop()
        runtime.close_store(self.store)

    # ------------------------------------------------------------------------------------- watcher

    def _run(self) -> None:
        asyncio.run(self._watch())

    async def _watch(self) -> None:
        backoff = 0.1
        while not self._stopping.is_set():
            try:
                await self._begin()
                while not self._stopping.is_set():
                    await self._step()
                    backoff = 0.1
                    await self.store.wait_for_change(timedelta(seconds=POLL_SECONDS))
            except Exception as error:  # keep watching whatever happens; log and start again
                if self._stopping.is_set():
                    break
                log.warning("console live feed lost the store (%s); retrying", error)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _begin(self) -> None:
        if not self._ready.is_set():
            self.cursor = max(self.cursor, await self.store.latest_event_id())
        self._ready.set()

    async def _step(self) -> None:
        now = time.monotonic()
        self._gaps = {g: until for g, until in self._gaps.items() if until > now}
        found = [LiveEvent.of(e) for e in await self.store.events_after(self.cursor, gaps=sorted(self._gaps))]
        for event in found:
            if event.id in self._gaps:
                del self._gaps[event.id]
            elif event.id > self.cursor:
                for missing in range(self.cursor + 1, event.id):
                    if len(self._gaps) < BATCH:
                        self._gaps[missing] = now + GAP_SECONDS
                self.cursor = event.id
        if found:
            with self._lock:
                subscribers = list(self._subscribers)
            for event in found:
                for subscription in subscribers:
                    subscription.offer(event)


_feed: Feed | None = None
_feed_lock = threading.Lock()


def feed() -> Feed:
    """The process's one feed."""
    global _feed
    with _feed_lock:
        if _feed is None:
            _feed = Feed(runtime.open_store(pool_size=2))
        return _feed


def reset() -> None:
    """Stop and forget the process's feed (tests that switch databases)."""
    global _feed
    with _feed_lock:
        if _feed is not None:
            _feed.close()
        _feed = None
