"""The flow the SIGKILL loop runs (`test_atomic_sigkill.py`): two atomic nodes and two ordinary ones, each
writing a `Posting` row through the ORM, each pausing inside its body so a kill often lands mid-body.

The ordinary steps are the seed's at-least-once: a kill between their row and their record re-runs them
(two rows). The atomic ones write their row in the transaction that records them: one row, always.
"""

from __future__ import annotations

import random
import time
from typing import Any

from examples.fulfilment.models import Posting
from flowdeck.engine.flow import Flow

__all__ = ["FLOW", "FLOWS", "start_many"]

PAUSE = (0.005, 0.05)  # seconds a body takes, drawn anew each run


def _post(ctx: Any) -> None:
    execution_id, _, node = ctx.key.partition("/")
    Posting.objects.create(execution_id=execution_id, node=node)
    time.sleep(random.uniform(*PAUSE))


def _tally(ctx: Any) -> int:
    _post(ctx)
    execution_id = ctx.key.partition("/")[0]
    return Posting.objects.filter(execution_id=execution_id).count()


FLOW = (
    Flow.init("atomic-ledger")
    .step("before", _post)
    .step("post", _post, atomic=True)
    .output("tally", _tally, type=int, atomic=True)
    .step("after", _post)
)
FLOWS = [FLOW]


def start_many(count: int, prefix: str = "ak") -> None:
    """Start `count` executions (`<prefix>-0000` …) from a management shell."""
    from flowdeck.console import runtime

    async def start() -> None:
        engine = await runtime.engine()
        for index in range(count):
            await engine.workflows.start(FLOW.name, execution_id=f"{prefix}-{index:04d}")

    runtime.run(start())
