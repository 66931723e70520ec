"""The console's live feed: ONE database watcher per server process, fanned out to every open page.

Workers run in other processes, so the web process learns of their commits from the database. A single
thread per process reads "events after the last id seen" (`queries.EVENTS_AFTER`) and hands each new event
to every subscriber (a websocket consumer) on the subscriber's own event loop. On PostgreSQL the thread
also LISTENs on the store's wake channel, so a signal, a start or a cancel from another process ends its
wait at once; every other write is caught by the next read, at most `POLL_SECONDS` later. On SQLite it
reads every `POLL_SECONDS` (a primary-key range read, cheap). However many pages are open, there is one
watcher and one database connection.

Ids are taken at insert and visible at commit, so a read can see id 12 before id 11 commits. Ids skipped
over are kept as gaps and asked for again for `GAP_SECONDS` (then given up as rolled back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connections

from console.conf import flowdeck_settings
from store.django import queries, wakeups
from store.django.models import Execution

__all__ = ["Feed", "LiveEvent", "Subscription", "events_after", "exists", "feed", "latest_event_id"]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
GAP_SECONDS = 10.0
BATCH = 1000


@dataclass(frozen=True)
class LiveEvent:
    """What a page hears: which execution changed, and how (the event's id, seq and kind)."""

    id: int
    execution_id: str
    workflow_id: str
    seq: int
    kind: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "event",
            "id": self.id,
            "execution_id": self.execution_id,
            "workflow_id": self.workflow_id,
            "seq": self.seq,
            "kind": self.kind,
        }


def _scope_sql(execution_id: str | None, workflow_id: str | None, params: dict[str, Any]) -> str:
    if execution_id is not None:
        params["execution"] = execution_id
        return " AND execution_id = %(execution)s"
    if workflow_id is not None:
        params["workflow"] = workflow_id
        return " AND flow_id = %(workflow)s"
    return ""


def _read(
    cursor: Any,
    vendor: str,
    after: int,
    gaps: Iterator[int] | list[int] = (),
    execution_id: str | None = None,
    workflow_id: str | None = None,
    limit: int = BATCH,
) -> list[LiveEvent]:
    params: dict[str, Any] = {"after": after, "limit": limit}
    gap_ids = [int(g) for g in gaps]  # ints only: safe to write into the text
    gap_sql = f" OR id IN ({', '.join(str(g) for g in gap_ids)})" if gap_ids else ""
    sql = queries.EVENTS_AFTER.text(vendor).format(
        gaps=gap_sql, scope=_scope_sql(execution_id, workflow_id, params)
    )
    cursor.execute(sql, params)
    return [LiveEvent(int(r[0]), r[1], r[2], int(r[3]), r[4]) for r in cursor.fetchall()]


def events_after(
    after: int, *, execution_id: str | None = None, workflow_id: str | None = None, limit: int = BATCH
) -> list[LiveEvent]:
    """Events above id `after` (of one execution or workflow), oldest first: what a reconnecting page
    missed. Synchronous (call through `sync_to_async`)."""
    connection = connections[flowdeck_settings().database_alias]
    with connection.cursor() as cursor:
        return _read(cursor, connection.vendor, after, (), execution_id, workflow_id, limit)


def exists(*, execution_id: str | None = None, workflow_id: str | None = None) -> bool:
    """Whether the execution, or an execution of the workflow, is stored. Synchronous."""
    executions = Execution.objects.using(flowdeck_settings().database_alias)
    if execution_id is not None:
        return executions.filter(id=execution_id).exists()
    return executions.filter(flow_id=workflow_id).exists()


def latest_event_id() -> int:
    """The newest event's id: a page rendered now asks the feed for what comes after it."""
    connection = connections[flowdeck_settings().database_alias]
    with connection.cursor() as cursor:
        cursor.execute(queries.LATEST_EVENT_ID.text(connection.vendor))
        return int(cursor.fetchone()[0])


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

    def __init__(self, alias: str) -> None:
        self.alias = alias
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

    # ------------------------------------------------------------------------------------- watcher

    def _run(self) -> None:
        backoff = 0.1
        while not self._stopping.is_set():
            try:
                connection = connections[self.alias]
                if connection.vendor == "postgresql":
                    self._watch_postgres(connection)
                else:
                    self._watch_polling(connection)
            except Exception as error:  # keep watching whatever happens; log and start again
                if self._stopping.is_set():
                    break
                log.warning("console live feed lost the database (%s); retrying", error)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
        with contextlib.suppress(Exception):
            connections[self.alias].close()

    def _watch_polling(self, connection: Any) -> None:
        with connection.cursor() as cursor:
            self._begin(cursor, connection.vendor)
        while not self._stopping.is_set():
            with connection.cursor() as cursor:
                self._step(cursor, connection.vendor)
            self._stopping.wait(POLL_SECONDS)

    def _watch_postgres(self, connection: Any) -> None:
        import psycopg

        params = wakeups.listener_params(connection)
        with psycopg.connect(**params, autocommit=True) as conn:
            conn.execute(f"LISTEN {queries.WAKE_CHANNEL}")
            with conn.cursor() as cursor:
                self._begin(cursor, "postgresql")
                while not self._stopping.is_set():
                    self._step(cursor, "postgresql")
                    # A NOTIFY ends the wait early; the timeout catches writes that send none.
                    for _ in conn.notifies(timeout=POLL_SECONDS, stop_after=1):
                        pass

    def _begin(self, cursor: Any, vendor: str) -> None:
        if not self._ready.is_set():
            cursor.execute(queries.LATEST_EVENT_ID.text(vendor))
            self.cursor = max(self.cursor, int(cursor.fetchone()[0]))
        self._ready.set()

    def _step(self, cursor: Any, vendor: str) -> None:
        now = time.monotonic()
        self._gaps = {g: until for g, until in self._gaps.items() if until > now}
        found = _read(cursor, vendor, self.cursor, sorted(self._gaps))
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
            _feed = Feed(flowdeck_settings().database_alias)
        return _feed


def reset() -> None:
    """Stop and forget the process's feed (tests that switch databases)."""
    global _feed
    with _feed_lock:
        if _feed is not None:
            _feed.stop()
        _feed = None
