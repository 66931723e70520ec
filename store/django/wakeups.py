"""Waking blocked `claim_ready` callers: a broadcast hub, and what feeds it from other processes.

The hub counts changes (a generation). A caller records the generation before its first ask, so only a
change made after the call began wakes it, and one change wakes every blocked caller, on whatever event
loop or thread each runs. Local writes bump it directly; writes of other processes arrive through
PostgreSQL's LISTEN/NOTIFY (one listener connection per store, on its own thread) or, on SQLite, through
the caller's own short poll of `PRAGMA data_version`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from store.django import queries

log = logging.getLogger(__name__)


class WakeHub:
    """A change generation and the futures of the callers blocked on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.generation = 0
        self.registrations = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def changed(self, *, registration: bool = False) -> None:
        """Something that may make a row ready happened: wake every blocked caller."""
        with self._lock:
            self.generation += 1
            if registration:
                self.registrations += 1
            waiters = list(self._waiters)
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                with self._lock:
                    self._waiters.discard((loop, future))

    def waiter(self) -> asyncio.Future[None]:
        """A future resolved at the next change; `forget` it when done."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.add((loop, future))
        return future

    def forget(self, future: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters.discard((future.get_loop(), future))
        future.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


# The NOTIFY payload is the sending store's origin, with this suffix after a "/" for a registration.
REGISTRATION = "registration"


def payload(origin: str, *, registration: bool = False) -> str:
    return f"{origin}/{REGISTRATION}" if registration else origin


class PostgresListener:
    """LISTENs on the wake channel on its own connection and thread; every notification sent by another
    store bumps the hub. After a lost connection it reconnects and bumps once (a notification may have been
    missed, so every caller asks again)."""

    def __init__(self, connect_params: dict[str, Any], hub: WakeHub, origin: str) -> None:
        self._params = connect_params
        self._hub = hub
        self._origin = origin
        self._stopping = threading.Event()
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flowdeck-store-listener", daemon=True)

    def start(self, wait: float = 5.0) -> None:
        """Start listening; returns once LISTEN is in place (or after `wait` seconds of failing to)."""
        self._thread.start()
        self._listening.wait(wait)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        backoff = 0.1
        while not self._stopping.is_set():
            try:
                with psycopg.connect(**self._params, autocommit=True) as conn:
                    conn.execute(queries.LISTEN_WAKE.text("postgresql"))
                    if self._listening.is_set():
                        self._hub.changed()  # reconnected: whatever was missed, ask again
                    self._listening.set()
                    backoff = 0.1
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=0.5):
                            sender, _, what = note.payload.partition("/")
                            if sender != self._origin:
                                self._hub.changed(registration=what == REGISTRATION)
            except Exception as error:  # keep listening whatever happens; log and reconnect
                if self._stopping.is_set():
                    return
                log.warning("wake listener lost its connection (%s); reconnecting", error)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


def listener_params(connection: Any) -> dict[str, Any]:
    """psycopg connect arguments for a Django PostgreSQL connection's settings (no Django adapters)."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
        params.pop(key, None)
    return params
