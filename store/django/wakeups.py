"""What feeds the wake hub (`store/wake_hub.py`) from other processes: on PostgreSQL their NOTIFYs, heard by
one listener connection per store on its own thread (on SQLite, the caller's own short poll of
`PRAGMA data_version`, in store/django/sqlite.py). Local writes bump the hub directly.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from flowdeck.store.django import queries
from flowdeck.store.wake_hub import WakeHub

__all__ = ["PostgresListener", "WakeHub", "listener_params", "listeners_on", "payload"]

log = logging.getLogger(__name__)


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

    @property
    def database(self) -> str:
        return str(self._params.get("dbname", ""))

    def start(self, wait: float = 5.0) -> None:
        """Start listening; returns once LISTEN is in place (or after `wait` seconds of failing to)."""
        _running.add(self)
        self._thread.start()
        self._listening.wait(wait)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        _running.discard(self)

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


_running: weakref.WeakSet[PostgresListener] = weakref.WeakSet()


def listeners_on(database: str) -> list[PostgresListener]:
    """The listeners of this process still running on `database`: what must stop before the database is
    dropped (a test session's own), or they reconnect to it, warning, for as long as the process lives."""
    return [listener for listener in list(_running) if listener.database == database]


def listener_params(connection: Any) -> dict[str, Any]:
    """psycopg connect arguments for a Django PostgreSQL connection's settings (no Django adapters)."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
        params.pop(key, None)
    return params
