"""The flows the bench runs on Flowdeck, each the twin of a DBOS workflow in `bench.peers.dbos_workloads`."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from typing import Any

from flowdeck.engine import Concurrency, Flow, Meta, RateLimit

# When set in a worker process's environment, `hold`'s step blocks for an hour: that worker holds its
# claims until it is killed (W6). The rescuing worker runs without it and finishes the step at once.
HOLD_ENV = "FLOWDECK_BENCH_HOLD"

# When set in a worker process's environment (to a number of steps), it also serves `keyed(steps)` (W14):
# only then do its claims count slots (W1's workers serve no limited flow).
KEYED_ENV = "FLOWDECK_BENCH_KEYED"

# perf_counter() at the moment `listener`'s step began, by execution id (W5 reads it in-process).
STAMPS: dict[str, float] = {}


def trivial(ctx: Any) -> None:
    return None


def chain(steps: int) -> Flow:
    flow = Flow.init(f"chain{steps}")
    for i in range(steps):
        flow = flow.step(f"s{i}", trivial)
    return flow


def keyed(steps: int) -> Flow:
    """W14: the chain, one running per key (the input `key`)."""
    flow = Flow.init(f"keyed{steps}", meta=Meta(concurrency=Concurrency(key="key", per_key=1))).input(
        "key", str
    )
    for i in range(steps):
        flow = flow.step(f"s{i}", trivial)
    return flow


def stamp(ctx: Any) -> None:
    STAMPS[ctx.execution_id] = time.perf_counter()


async def hold(ctx: Any) -> None:
    if os.environ.get(HOLD_ENV) == "1":
        await asyncio.sleep(3600)


LISTENER = Flow.init("listener").input("go", int).step("after", stamp)
HOLD = Flow.init("hold").step("hold", hold)
NAP = Flow.init("nap").sleep("nap", timedelta(hours=1))


# W15: a worker process given a rate (tokens per second) in its environment declares the limit `w15` and
# serves `rated`, whose one step uses it; without it, neither (W1's workers are untouched).
RATE_ENV = "FLOWDECK_BENCH_RATE"
RATE_LIMIT = "w15"


def rated() -> Flow:
    return Flow.init("rated").step("call", trivial, rate_limit=RATE_LIMIT)


def rate_limits() -> dict[str, RateLimit]:
    rate = os.environ.get(RATE_ENV)
    return {RATE_LIMIT: RateLimit(int(rate))} if rate else {}


def all_flows(steps: tuple[int, ...] = (10, 3)) -> list[Flow]:
    rate = [rated()] if os.environ.get(RATE_ENV) else []
    return [*(chain(n) for n in sorted(set(steps))), LISTENER, HOLD, NAP, *rate]
