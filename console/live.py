"""The console's live feed: ONE store watcher per server process, fanned out to every open page.

Workers run in other processes, so the web process learns of their commits from the store. A single thread
per process, on an event loop of its own, reads the store's feed ("events after the last id seen",
`FlowStore.events_after`) and hands each read's new events to every subscriber (a websocket consumer) on
the subscriber's own event loop, as ONE batch per page: a page hears a read in one message, encoded once
for every page of the same scope (100 list pages watching a busy engine would otherwise cost a message per
event per page, more than one server process can send: W12), sent by one task per loop (`live_pages`).
Between reads it waits on `FlowStore.wait_for_change` for at most `POLL_SECONDS`: on PostgreSQL the Django
store's LISTEN connection ends that wait at once for a signal, a start or a cancel from another process;
every other write is caught by the next read, at most `POLL_SECONDS` later. On SQLite it reads every
`POLL_SECONDS` (a primary-key range read, cheap). However many pages are open, there is one watcher on one
store of its own (`runtime.open_store`).

A step's commit NOTIFYs nobody (that would wake every worker's poller), so while events keep coming and
pages of one execution are watching, the watcher reads every `FAST_POLL_SECONDS` instead (for
`ACTIVE_SECONDS` after the last event): a commit reaches such a page in tens of milliseconds, not up to a
whole `POLL_SECONDS` (W10).

A page of one execution also hears that execution's progress (`live_progress`): after the events of a
read, the watcher builds the execution's JSON diagram once, however many pages watch it, and at most once
per `PROGRESS_SECONDS` (a burst's newest state wins; what comes meanwhile is built at the next turn), and
hands it to each of them; their events say it follows, so no page fetches it.

While every open page watches everything (the executions list), a read is of the ids alone
(`FlowStore.event_ids_after`): such pages hear nothing but the ids, so no row's strings are decoded and no
event object is made for them (W12).

A read answers at most `BATCH` events; one that came back full is followed by the next at once, so a feed
behind an engine committing more than `BATCH` events per `POLL_SECONDS` catches up before it sends, instead
of falling further behind.

Ids are taken at insert and visible at commit, so a read can see id 12 before id 11 commits. Ids skipped
over are kept as gaps and asked for again for `GAP_SECONDS` (then given up as rolled back).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

from flowdeck.console import live_pages, live_progress, runtime
from flowdeck.console.live_batch import (
    EVERYTHING,
    LiveBatch,
    LiveEvent,
    Scope,
    batch_json,
    changes_json,
    in_scope,
)
from flowdeck.console.live_pages import Subscription
from flowdeck.console.live_progress import FlowOf, LiveProgress
from flowdeck.store import feed as store_feed
from flowdeck.store import spi

__all__ = [
    "EVERYTHING",
    "Feed",
    "LiveBatch",
    "LiveEvent",
    "LiveProgress",
    "Scope",
    "Subscription",
    "batch_json",
    "changes_json",
    "in_scope",
    "events_after",
    "exists",
    "feed",
    "latest_event_id",
]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.15  # an idle feed's reads, and a busy one's with pages of many executions only: as
# often as those pages may hear (MANY_SECONDS); a read between two of their batches would only be held
FAST_POLL_SECONDS = 0.02
ACTIVE_SECONDS = 2.0
PROGRESS_SECONDS = 0.05
MANY_SECONDS = 0.15  # a page of many executions hears at most one batch this often: its list refreshes at
# most every 150 ms (console.js), so hearing more often would cost the server and buy the page nothing;
# a page of one execution hears each read at once
GAP_SECONDS = 10.0
BATCH = store_feed.BATCH
CATCH_UP_READS = 10  # full reads in a row before the watcher sends what it has (10,000 events)


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


class Feed:
    """The process's watcher thread (started by the first subscriber) and its subscribers."""

    def __init__(self, store: spi.FlowStore, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._monotonic = monotonic  # the feed's clock (tests turn it by hand)
        self.cursor = 0  # the highest id read so far
        self.watchers_started = 0
        self.progress_built = 0  # progress documents built, however many pages each went to
        self._gaps: dict[int, float] = {}
        self._last_event = -ACTIVE_SECONDS  # monotonic time of the newest event read
        self._behind = False  # the last read was a full one: more are committed than it could answer
        self._pending: dict[str, int] = {}  # execution → the newest event id its progress must reflect
        self._built: dict[str, float] = {}  # execution → when its progress was last built (monotonic)
        self._held: dict[Scope, list[int]] = {}  # a many-execution scope's event ids not sent yet
        self._sent: dict[Scope, float] = {}  # a many-execution scope → when its last batch went (monotonic)
        self._flow_of: FlowOf | None = None
        self._subscribers: set[Subscription] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------------- subscribers

    def subscribe(self, *, execution_id: str | None = None, workflow_id: str | None = None) -> Subscription:
        """A subscription on the running loop to one execution's events, one workflow's, or (neither)
        every event; starts the watcher if it is not running yet."""
        subscription = Subscription(self, (execution_id, workflow_id))
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
                    self._flush_held()
                    await self._push_progress()
                    backoff = 0.1
                    await self.store.wait_for_change(timedelta(seconds=self._wait_seconds()))
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
        """Read what is new and offer it; a read that came back full is followed by the next at once, up
        to `CATCH_UP_READS`, so that what is due goes out whole rather than its newest part a batch later."""
        for _ in range(CATCH_UP_READS):
            self._behind = await self._read()
            if not self._behind:
                return

    async def _read(self) -> bool:
        """One read, offered; answers whether it came back full. While every page watches everything
        (the executions list), the read is of the ids alone: those pages hear nothing else (W12)."""
        now = self._monotonic()
        self._gaps = {g: until for g, until in self._gaps.items() if until > now}
        gaps = sorted(self._gaps)
        with self._lock:  # a page of one execution joining during this read hears it in its replay (`after`)
            ids_alone = all(page.scope == EVERYTHING for page in self._subscribers)
        if ids_alone:
            ids = list(await self.store.event_ids_after(self.cursor, gaps=gaps))
            self._advance(ids, now)
            if ids:
                self._held.setdefault(EVERYTHING, []).extend(ids)
            return len(ids) >= BATCH
        found = [LiveEvent.of(e) for e in await self.store.events_after(self.cursor, gaps=gaps)]
        self._advance([event.id for event in found], now)
        if found:
            with self._lock:
                subscribers = list(self._subscribers)
            self._offer(found, subscribers)
        return len(found) >= BATCH

    def _advance(self, ids: Sequence[int], now: float) -> None:
        """Move the cursor over a read's ids, keeping the ids it skipped as gaps."""
        for event_id in ids:
            if event_id in self._gaps:
                del self._gaps[event_id]
            elif event_id > self.cursor:
                for missing in range(self.cursor + 1, event_id):
                    if len(self._gaps) < BATCH:
                        self._gaps[missing] = now + GAP_SECONDS
                self.cursor = event_id
        if ids:
            self._last_event = now

    def _offer(self, found: list[LiveEvent], subscribers: list[Subscription]) -> None:
        """Each scope's share of the read: to a page of one execution at once, encoded once for all its
        pages, with its progress made due; for pages of many executions, held for `_flush_held`."""
        deliveries: list[tuple[Subscription, LiveBatch]] = []
        for scope, pages in _by_scope(subscribers).items():
            wanted = [event for event in found if in_scope(scope, event)]
            if not wanted:
                continue
            execution_id = scope[0]
            if execution_id is None:
                self._held.setdefault(scope, []).extend(event.id for event in wanted)
                continue
            batch = LiveBatch.of(wanted)
            deliveries += [(page, batch) for page in pages]
            newest = max(event.id for event in wanted)
            self._pending[execution_id] = max(newest, self._pending.get(execution_id, 0))
        live_pages.deliver(deliveries)

    def _flush_held(self) -> None:
        """The held events of each many-execution scope whose last batch went `MANY_SECONDS` ago or
        more, as one batch encoded once for all its pages."""
        if not self._held:
            return
        now = self._monotonic()
        with self._lock:
            pages_of = _by_scope(list(self._subscribers))
        deliveries: list[tuple[Subscription, LiveBatch]] = []
        for scope in list(self._held):
            if scope not in pages_of:  # its pages left
                del self._held[scope]
                continue
            if now - self._sent.get(scope, -MANY_SECONDS) < MANY_SECONDS:
                continue
            batch = LiveBatch.changes(self._held.pop(scope))
            self._sent[scope] = now
            deliveries += [(page, batch) for page in pages_of[scope]]
        live_pages.deliver(deliveries)

    def _wait_seconds(self) -> float:
        if self._behind:  # an engine committing more than BATCH events per wait: read on at once
            return 0.0
        now = self._monotonic()
        with self._lock:
            watching_one = any(page.progress_of is not None for page in self._subscribers)
        # Only a page of one execution is worth a read every FAST_POLL_SECONDS: a page of many executions
        # hears a batch at most every MANY_SECONDS anyway, so for those a read every POLL_SECONDS will do.
        active = watching_one and now - self._last_event < ACTIVE_SECONDS
        wait = FAST_POLL_SECONDS if active else POLL_SECONDS
        for execution_id in self._pending:  # a progress held back by PROGRESS_SECONDS is built when due
            due = self._built.get(execution_id, -PROGRESS_SECONDS) + PROGRESS_SECONDS
            wait = min(wait, max(0.0, due - now))
        for scope in self._held:  # and a held batch is sent when due
            due = self._sent.get(scope, -MANY_SECONDS) + MANY_SECONDS
            wait = min(wait, max(0.0, due - now))
        return wait

    async def _push_progress(self) -> None:
        """Each watched execution's progress, built once for all its pages, at most every PROGRESS_SECONDS."""
        if not self._pending:
            return
        now = self._monotonic()
        self._built = {e: at for e, at in self._built.items() if now - at < PROGRESS_SECONDS}
        due = {e: event_id for e, event_id in self._pending.items() if e not in self._built}
        for execution_id in due:
            del self._pending[execution_id]
            self._built[execution_id] = now
        self.progress_built += len(due)
        if self._flow_of is None:
            self._flow_of = live_progress.served_flows()
        flow_of = self._flow_of
        built = await asyncio.gather(
            *(live_progress.document(self.store, flow_of, e, event_id) for e, event_id in due.items()),
            return_exceptions=True,
        )
        with self._lock:
            subscribers = list(self._subscribers)
        for (execution_id, event_id), item in zip(due.items(), built, strict=True):
            if isinstance(item, BaseException):  # the pages fetch the diagram themselves
                log.warning("console live feed could not build %s's progress (%s)", execution_id, item)
                item = LiveProgress(execution_id, event_id, 0, None)
            live_pages.deliver([(page, item) for page in subscribers if page.progress_of == execution_id])


def _by_scope(subscribers: list[Subscription]) -> dict[Scope, list[Subscription]]:
    pages: dict[Scope, list[Subscription]] = {}
    for subscription in subscribers:
        pages.setdefault(subscription.scope, []).append(subscription)
    return pages


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
