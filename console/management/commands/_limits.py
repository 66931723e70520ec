"""`flow limits [--workflow WF] [--busiest N]`: each concurrency limit now, with its running and queued.

One row per workflow limit, then the busiest keys (most queued first): the limit, its capacity, the slots
held, the queued and how long the oldest of them has waited (`store.concurrency`). `--json` prints the
same as REST's `GET /api/v1/limits`. Read-only.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.core.management.base import CommandError, CommandParser

from flowdeck.console import limits
from flowdeck.console.management.commands._output import table
from flowdeck.engine.engine import FlowEngine

__all__ = ["add_arguments", "run"]

MAX_BUSIEST = 1000


def add_arguments(parser: CommandParser) -> None:
    parser.add_argument("--workflow", "-w", default=None, metavar="WF", help="only this workflow's limits")
    parser.add_argument(
        "--busiest",
        type=int,
        default=10,
        help=f"keys shown, the most queued first (default 10, at most {MAX_BUSIEST})",
    )


async def run(engine: FlowEngine, o: Mapping[str, Any], emit: Callable[[Any, str], None]) -> None:
    busiest = o["busiest"]
    if not 0 <= busiest <= MAX_BUSIEST:
        raise CommandError(f"--busiest: from 0 to {MAX_BUSIEST}, got {busiest}", returncode=2)
    store = engine.store
    found = await store.limit_counts(o["workflow"], busiest)
    now = store.now()
    data = [limits.count_json(c, now) for c in found]
    rows = [
        (
            limits.group_text(c.group),
            str(c.capacity),
            str(c.running),
            str(c.queued),
            limits.wait_text(c.oldest_queued, now),
        )
        for c in found
    ]
    text = (
        table(("limit", "capacity", "running", "queued", "oldest queued waits"), rows)
        if rows
        else "no limit has work"
    )
    emit({"items": data}, text)
