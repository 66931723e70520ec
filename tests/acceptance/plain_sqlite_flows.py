"""The flow of the `startproject` SQLite acceptance test (`test_plain_sqlite.py`): an order's fulfilment
whose steps write through the ORM on the host's own connections (the project's DATABASES, no OPTIONS),
beside the worker's store and the concurrent starts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import transaction

from examples.fulfilment.models import Posting
from flowdeck.engine.flow import Flow

__all__ = ["FLOW", "FLOWS", "start_many"]


def _post(ctx: Any) -> None:
    execution_id, _, node = ctx.key.partition("/")
    Posting.objects.create(execution_id=execution_id, node=node)


def _charge(ctx: Any) -> int:
    return 4200


def _ship(ctx: Any) -> int:
    """Read, then write, in one transaction as ORM code does: under `startproject`'s deferred
    transactions the write may find that another connection wrote since the read (SQLite answers
    `database is locked` at once, no busy timeout helps), which the engine retries."""
    execution_id, _, node = ctx.key.partition("/")
    with transaction.atomic():
        shipped = Posting.objects.filter(execution_id=execution_id).count()
        Posting.objects.create(execution_id=execution_id, node=node)
    return shipped + 1


FLOW = (
    Flow.init("plain-order")
    .step("reserve", _post)
    .output("charged", _charge, type=int)
    .step("track", _post)
    .output("shipped", _ship, type=int)
)
FLOWS = [FLOW]


def start_many(count: int, prefix: str, threads: int) -> None:
    """Start `count` executions (`<prefix>-0000` …) from `threads` threads at once, as a host's request
    threads would (the application client, outside any transaction of theirs)."""
    from flowdeck.console import client

    def start(index: int) -> str:
        return client.start(FLOW.name, execution_id=f"{prefix}-{index:04d}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(start, range(count)))
