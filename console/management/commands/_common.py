"""What the management commands share: readable engine logs, signal handling, serving engines.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any, TextIO

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError
from django.db import connections

from flowdeck.console import runtime
from flowdeck.console.conf import FlowdeckSettings, flowdeck_settings
from flowdeck.console.discovery import registered_flows
from flowdeck.console.management.commands import _output
from flowdeck.engine import body_threads
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.errors import FlowConfigError
from flowdeck.store import spi

__all__ = [
    "bounded_body_threads",
    "build_engine",
    "checked_settings",
    "engine_logging",
    "flows_to_serve",
    "stop_on_signals",
    "usage_error",
]

logger = logging.getLogger("flowdeck.console.workers")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def usage_error(message: str) -> CommandError:
    """Bad input: exit code 2, the message and no traceback."""
    return CommandError(message, returncode=2)


def checked_settings() -> FlowdeckSettings:
    """This process's `FLOWDECK_*` settings; a malformed one (`FLOWDECK_RETENTION`) exits 2 saying why."""
    try:
        return flowdeck_settings()
    except ImproperlyConfigured as error:
        raise usage_error(str(error)) from None


# ---------------------------------------------------------------------------------------- logging


class _Action(logging.Filter):
    """Every engine record carries `extra={"action": ...}`; others get a dash so the format holds."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "action"):
            record.action = "-"
        return True


@contextlib.contextmanager
def engine_logging(verbosity: int = 1, stream: TextIO | None = None) -> Iterator[None]:
    """Log the engine's claims and outcomes as `time level action message` lines, for this command only."""
    handler = logging.StreamHandler(stream or sys.stderr)
    # an id or a reason in a log line must not drive the operator's terminal
    handler.setFormatter(_output.EscapingFormatter("%(asctime)s %(levelname)-7s %(action)-14s %(message)s"))
    handler.addFilter(_Action())
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    saved = []
    for name in ("flowdeck.engine", "flowdeck.console"):
        target = logging.getLogger(name)
        saved.append((target, target.level, target.propagate))
        target.addHandler(handler)
        target.setLevel(level)
        target.propagate = False
    try:
        yield
    finally:
        for target, level_before, propagate in saved:
            target.removeHandler(handler)
            target.setLevel(level_before)
            target.propagate = propagate


# ---------------------------------------------------------------------------------------- signals


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event, *, on_second: Callable[[], None] | None = None) -> Iterator[None]:
    """While inside, the first SIGINT/SIGTERM sets `stop`; a second one calls `on_second`.

    The previous handlers are put back on leaving (procrastinate's signals idea), so a test or an
    embedding program gets its own behaviour back.
    """
    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    received: list[int] = []

    def handle(sig: signal.Signals) -> None:
        received.append(sig)
        if len(received) == 1:
            logger.info(
                "received %s: finishing what is running, then stopping (send again to stop now)",
                sig.name,
                extra={"action": "shutdown"},
            )
            stop.set()
        elif on_second is not None:
            on_second()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, handle, sig)
    try:
        yield
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
            signal.signal(sig, previous[sig])


# ---------------------------------------------------------------------------------------- engines


def flows_to_serve(only: str | None) -> list[str]:
    """The discovered workflow ids, or the comma-separated subset `only` names (an unknown id is refused);
    `runtime.serve` registers every declared version of each."""
    found = registered_flows()
    if not found:
        raise usage_error(
            "no flows to serve: no installed app has a flows.py declaring FLOWS, and "
            "FLOWDECK_FLOW_MODULES names none"
        )
    if not only:
        return list(found)
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in found]
    if unknown or not wanted:
        raise usage_error(
            f"--flows names unknown workflow(s): {', '.join(unknown) or '(none given)'}; "
            f"discovered: {', '.join(sorted(found))}"
        )
    return wanted


def _store(slots: int) -> spi.FlowStore:
    """The process's store, with a connection pool sized to the attempts it can run at once.

    PostgreSQL's connections are a shared budget: N worker processes each holding the default pool would
    spend it on idle connections. SQLite keeps its single connection."""
    alias = flowdeck_settings().database_alias
    try:
        if connections[alias].vendor != "postgresql":
            return runtime.store()
        return runtime.open_store(pool_size=max(2, min(8, slots + 1)))
    except spi.FlowStoreError as error:  # a database the store cannot make safe (SQLite in a read-only place)
        raise usage_error(str(error)) from None


def bounded_body_threads(slots: int) -> None:
    """Run sync bodies on at most `slots` threads (each keeps a database connection of its own)."""
    body_threads.limit(slots)


def build_engine(options: Mapping[str, Any], *, poll_timeout: timedelta | None = None) -> FlowEngine:
    """A FlowEngine with workers on this process's store; options override the FLOWDECK_* settings.

    A bad configuration exits with code 2, listing every problem at once.
    """
    conf = flowdeck_settings()

    def pick(name: str, default: Any) -> Any:
        value = options.get(name)
        return default if value is None else value

    def span(name: str, default: timedelta) -> timedelta:
        value = options.get(name)
        return default if value is None else timedelta(seconds=value)

    workers, batch_size = pick("workers", conf.workers), pick("batch_size", conf.batch_size)
    try:
        return FlowEngine(
            _store(workers * batch_size),
            (),
            workers=workers,
            lease=span("lease", conf.lease),
            renew_every=span("renew_every", conf.renew_every),
            batch_size=batch_size,
            poll_timeout=poll_timeout or conf.poll_timeout,
            shutdown_grace=span("shutdown_grace", conf.shutdown_grace),
            transient=runtime.TRANSIENT,
        )
    except FlowConfigError as error:
        problems = "\n".join(f"  - {p}" for p in error.problems)
        raise usage_error(f"invalid worker configuration:\n{problems}") from None
