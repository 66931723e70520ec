"""A start deferred to a time (Django's `run_after`): no worker runs the execution before it.

The Created event's data carries the time (`{"not_before": "2026-12-05T03:00:00+00:00"}`, absent for an
ordinary start), and a store writes the execution with one wait row at `PATH`, due then, in the same write
that creates it. Nothing else is needed: a row with waits is ready once one of them is satisfied (I8), so no
claim takes it early; the workers' next wake-up counts its deadline as a sleep's; the console shows the
execution sleeping until then. The first attempt's ending retires the row (a suspension keeps only the
waits the walk parked on; an ending keeps none). `#` cannot appear in a node's name (`schema.RESERVED`), so
the path is no node's, and it is not the retry back-off's mark (`#retry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flowdeck.store.wakes import Wake, WakeAt

__all__ = ["PATH", "initial_waits", "not_before_of", "with_not_before"]

PATH = "#run_after"


def not_before_of(data: Mapping[str, Any]) -> datetime | None:
    """The time a Created event's data defers its execution to, if any."""
    text = data.get("not_before")
    return datetime.fromisoformat(text) if isinstance(text, str) else None


def with_not_before(data: Mapping[str, Any], at: datetime | None) -> dict[str, Any]:
    """A Created event's data deferring its execution to `at` (unchanged when None)."""
    return dict(data) if at is None else {**data, "not_before": at.isoformat()}


def initial_waits(data: Mapping[str, Any]) -> dict[str, Wake]:
    """The wait rows a store writes with a new execution whose Created event has `data`."""
    at = not_before_of(data)
    return {} if at is None else {PATH: WakeAt(at)}
