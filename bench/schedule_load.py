"""W16: schedule ticks per second, 1,000 schedules due at once, with zero duplicates.

`schedules` schedules of one trivial workflow, each every minute, go into a database of their own; the
store's clock (a `ManualClock`) is set a second past a minute so that every one of them has a tick due.
`tickers` schedulers, each with its own engine and store (its own connections, as separate worker
processes have), run their round at the same time, racing over every tick. Reported: the ticks decided
per second (the schedules over the wall time until the last round ended), and, read back from the
database, the executions and tick records per schedule: each must be exactly one.

    python -m bench.workloads w16 --schedules 1000 --tickers 2
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import flowdeck_env, pg

SCHEDULE_DB = f"flowdeck_bench_schedules{pg.SUFFIX}"
START = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)


async def _measure(count: int, tickers: int) -> dict[str, Any]:
    from flowdeck import Flow, scheduled
    from flowdeck.engine import scheduler
    from flowdeck.engine.engine import FlowEngine
    from flowdeck.store.clock import ManualClock

    clock = ManualClock(START)
    flow = Flow.init("tick").step("noop", lambda ctx: None)
    stores = [flowdeck_env.store_class()(using="default", clock=clock) for _ in range(tickers)]
    engines = [FlowEngine(store, clock=clock) for store in stores]
    for engine in engines:
        await engine.register("tick", flow)
    specs = [scheduled(f"s{i:05d}", "tick", every=timedelta(minutes=1)) for i in range(count)]
    await scheduler.Scheduler(engines[0]).declare(specs)
    await clock.advance(60)  # 12:01:30: every schedule's 12:01 tick is due
    began = time.perf_counter()
    rounds = await asyncio.gather(*(scheduler.Scheduler(engine).round() for engine in engines))
    elapsed = time.perf_counter() - began
    started = [eid for found in rounds for eid in found]
    for store in stores:
        await store.aclose()
    return {"elapsed_seconds": elapsed, "ticks_per_second": count / elapsed, "started_reported": len(started)}


def _read_back() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("select count(*), count(distinct id) from flowstore_execution")
        executions, distinct = cursor.fetchone()
        cursor.execute("select count(*), count(distinct (schedule, tick)) from flowstore_schedule_tick")
        ticks, distinct_ticks = cursor.fetchone()
    return {
        "executions": executions,
        "distinct_executions": distinct,
        "ticks": ticks,
        "distinct_ticks": distinct_ticks,
    }


def run(schedules: int, tickers: int) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", SCHEDULE_DB)
    found = asyncio.run(_measure(schedules, tickers))
    counted = _read_back()
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "schedules": schedules,
        "tickers": tickers,
        **found,
        **counted,
        "duplicates": counted["executions"] - counted["distinct_executions"],
        "exact": counted["executions"] == counted["ticks"] == schedules == found["started_reported"],
    }
