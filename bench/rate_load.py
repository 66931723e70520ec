"""W15: a rate limit of 100 per second shared by 4 worker processes: the rate observed within 5 % of it,
and the CPU the waiting executions cost.

`executions` executions of `rated` (one step, `call`, using the limit `w15`) are created before the
worker processes go; every worker process declares the limit (`FLOWDECK_BENCH_RATE` per second, read by
`bench.flows.rate_limits`). Each execution takes a token before its step: the first few at once, the rest
reserve a slot, wait durably (no claim held) and run when woken at it. The observed rate is read back from
the history: the StepStarted events of `call` (written once the node holds its token), (n - 1) over the
span from the first to the last. Reported beside it: the worker processes' CPU (user + system) over the
run, per execution and as a share of one core, and how many executions waited (RateLimited events).

    python -m bench.rate_load w15 --executions 1000 --procs 4 --rate 100
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
from typing import Any

from bench import cpu, flowdeck_env, pg, protocol, workloads
from bench.worker import add_engine_arguments

WORKFLOW = "rated"


async def _start(executions: int, rate: int) -> float:
    from bench.flows import RATE_LIMIT, rated
    from flowdeck.engine.engine import FlowEngine
    from flowdeck.engine.rate_limits import RateLimit

    store = flowdeck_env.make_store()
    starter = FlowEngine(store, (), workers=1, rate_limits={RATE_LIMIT: RateLimit(rate)})
    began = time.perf_counter()
    await starter.register(WORKFLOW, rated())
    await workloads.start_many(starter, WORKFLOW, [f"rated-{i:06d}" for i in range(executions)])
    seconds = time.perf_counter() - began
    await store.aclose()
    return seconds


def _read_back(database: str, interval: float) -> dict[str, Any]:
    with pg.connect(database) as conn:
        starts = [
            row[0]
            for row in conn.execute(
                "select timestamp from flowstore_event where kind = 'StepStarted'"
                " and data::jsonb ->> 'step_name' = 'call' order by timestamp"
            ).fetchall()
        ]
        asked = [
            row[0]
            for row in conn.execute(
                "select timestamp from flowstore_event where kind = 'RateLimited' order by timestamp"
            ).fetchall()
        ]
        slots = [
            row[0]
            for row in conn.execute(
                "select (data::jsonb ->> 'until')::timestamptz from flowstore_event"
                " where kind = 'RateLimited' order by 1"
            ).fetchall()
        ]
    return {
        "calls": len(starts),
        "span_seconds": _span(starts),
        "rate_limited_waits": len(asked),
        # how fast the waiting executions asked for their slot: below the limit, the engine (not the limit)
        # set the pace, and the limit was not binding
        "asked_per_s": (len(asked) - 1) / _span(asked) if len(asked) > 1 and _span(asked) else 0.0,
        # the slots the workers' takes reserved, from every process: never two closer than the limit's
        # interval (a token over-spent would be); a microsecond's slack for the clock's rounding
        "slots_too_close": sum(
            1 for a, b in itertools.pairwise(slots) if (b - a).total_seconds() < interval - 1e-6
        ),
    }


def _span(instants: list[Any]) -> float:
    return (instants[-1] - instants[0]).total_seconds() if len(instants) > 1 else 0.0


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from bench.flows import RATE_ENV

    flowdeck_env.fresh_database("postgres", ns.database)
    start_seconds = asyncio.run(_start(ns.executions, ns.rate))
    env = {RATE_ENV: str(ns.rate)}
    children = workloads.start_workers(ns, ns.procs, max(1, ns.workers // ns.procs), env, wait_go=True)
    probe = workloads.Probe("postgres", ns.database)
    try:
        meter = cpu.Meter({"workers": [child.pid for child in children]})
        began = time.perf_counter()
        for child in children:
            protocol.go(child)
        ended = probe.wait_until(
            "W15", lambda: probe.completed(WORKFLOW), ns.executions, ns.timeout, every=0.05
        )
        spent = meter.spent()
    finally:
        probe.close()
        workloads.stop_all(children)
    found = _read_back(ns.database, 1 / ns.rate)
    observed = (found["calls"] - 1) / found["span_seconds"] if found["span_seconds"] else 0.0
    elapsed = ended - began
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "executions": ns.executions,
        "processes": ns.procs,
        "rate": ns.rate,
        "observed_per_s": observed,
        "ratio": observed / ns.rate,
        "seconds": elapsed,
        "start_seconds": start_seconds,
        "cpu_seconds": spent["workers"],
        "cpu_ms_per_execution": spent["workers"] / ns.executions * 1e3,
        "cpu_share_of_a_core": spent["workers"] / elapsed,
        "database_cpu_seconds": spent["database"],
        **found,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_load")
    parser.add_argument("command", choices=["w15"])
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rate", type=int, default=100, help="the rate limit, per second")
    parser.add_argument("--timeout", type=float, default=300.0)
    ns = parser.parse_args(argv)
    protocol.emit(run(ns))
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
