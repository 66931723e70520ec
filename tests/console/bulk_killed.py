"""`python -m tests.console.bulk_killed VERB PREFIX N AT`: a process that dies mid-way through a bulk
operation (VERB: `cancel`, `resume:go` or `end`). (`python -m tests.console.bulk_killed --again OP` runs
operation OP again, to its end.)

It starts N executions named PREFIX-0000 … (`counter` ones to cancel or end; `versioned` ones started under
V0, which no process serves any more, to resume), creates the bulk operation over them, prints
`{"operation": ID}`, and runs it. The store's write for the verb (`DjangoStore._request_cancel_in`,
`operator_writes.resume_in`, `operator_writes.end_in`: the ones every such write goes through, joined or
not) is counted: once the AT-th has been written, it prints `{"written": AT}` and blocks on stdin, for the
test to SIGKILL it there. `DATABASE_URL` picks the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import django

FLOWS = ["tests.console.flows", "tests.console.versioned_flows"]


def _counted(original: Callable[..., Any], at: int) -> Callable[..., Any]:
    made = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal made
        answer = original(*args, **kwargs)
        made += 1
        if made == at:
            print(json.dumps({"written": made}), flush=True)
            sys.stdin.readline()  # killed here, its transaction still open
        return answer

    return counted


def _halt_at(verb: str, at: int) -> None:
    from flowdeck.store.django import operator_writes
    from flowdeck.store.django.store import DjangoStore

    if verb == "cancel":
        DjangoStore._request_cancel_in = _counted(DjangoStore._request_cancel_in, at)  # type: ignore[method-assign]
    elif verb == "resume:go":
        operator_writes.resume_in = _counted(operator_writes.resume_in, at)
    else:
        operator_writes.end_in = _counted(operator_writes.end_in, at)


async def _started(verb: str, ids: list[str]) -> None:
    """The executions the operation acts on: parked ones (started under V0) to resume, else running."""
    from flowdeck.console import runtime
    from flowdeck.engine.engine import FlowEngine
    from tests.console.versioned_flows import V0

    if verb == "resume:go":
        earlier = FlowEngine(runtime.store())
        await earlier.register("versioned", V0)
        for eid in ids:
            await earlier.workflows.start("versioned", execution_id=eid)
        return
    engine = await runtime.engine()
    for eid in ids:
        await engine.workflows.start("counter", execution_id=eid)


async def main(verb: str, prefix: str, n: int, at: int) -> None:
    from flowdeck.console import bulk, runtime
    from flowdeck.console.discovery import discover

    discover(FLOWS)
    ids = [f"{prefix}-{i:04d}" for i in range(n)]
    await _started(verb, ids)
    engine = await runtime.engine()  # registered after V0: the newest `versioned` is V2
    op_id = await bulk.create("ada", "cli", verb, ids, reason="killed mid-way")
    print(json.dumps({"operation": op_id}), flush=True)
    _halt_at(verb, at)
    await bulk.run(engine, op_id)
    print(json.dumps({"finished": True}), flush=True)


async def again(op_id: int) -> None:
    from flowdeck.console import bulk, runtime
    from flowdeck.console.discovery import discover

    discover(FLOWS)
    await bulk.run(await runtime.engine(), op_id)
    print(json.dumps({"finished": True}), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    if sys.argv[1] == "--again":
        asyncio.run(again(int(sys.argv[2])))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
