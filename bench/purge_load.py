"""W13: purge the ended executions of W7's mix, rows per second, while W7's worst search arm is measured.

`rows` executions of W7's mix (`search_load.load`, the same recipe: 75 % of them ended) plus four events
each go into a database of their own. First every W7 arm is timed (`reps` each) to find the worst p95;
then every ended execution is purged (`retention.purge`, `batch` per transaction, no pause: the CLI's
`flowdeck purge --pause 0`) while a second task searches that worst arm in a loop on the same store. Reported:
the executions purged and their rows per second, the ledger rows that went with them, and the worst arm's
p50/p95 before and during the purge. The purge's count is checked against the recipe's, and afterwards no
ended execution is left and every unended one is.

    python -m bench.workloads w13 --rows 20000 --reps 20       # small; the lead runs --rows 1333334
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import flowdeck_env, pg, search_load, stats

PURGE_DB = f"flowdeck_bench_purge{pg.SUFFIX}"
ENDED = ("completed", "failed", "cancelled")

LOAD_EVENTS = f"""
insert into flowstore_event (execution_id, seq, flow_id, kind, timestamp, data)
select 'ex' || lpad(i::text, 8, '0'), k, (array['orders', 'payments', 'shipping'])[1 + i %% 3],
    (array['Created', 'ExecutionClaimed', 'StepStarted', 'StepCompleted'])[k], ts, '{{}}'
{search_load._ROWS}
cross join generate_series(1, 4) as k
"""


def _load(rows: int) -> float:
    began = time.perf_counter()
    search_load.load(rows, PURGE_DB)
    with pg.connect(PURGE_DB) as conn:
        conn.execute(LOAD_EVENTS, {"rows": rows, "base": search_load.W7_BASE})
        conn.execute("vacuum analyze flowstore_event")
    return time.perf_counter() - began


def _table_rows() -> dict[str, int]:
    with pg.connect(PURGE_DB) as conn:
        return {
            table: conn.execute(f"select count(*) from flowstore_{table}").fetchone()[0]  # type: ignore[index]
            for table in ("execution", "event", "field", "wait")
        }


async def _time_arm(store: Any, arm: tuple[Any, ...]) -> float:
    _, flow_id, filt, prefix, fields = arm
    began = time.perf_counter()
    await store.list_executions(flow_id, filt, 25, 0, prefix, fields)
    return (time.perf_counter() - began) * 1000


async def _worst_arm(store: Any, reps: int) -> tuple[tuple[Any, ...], dict[str, float]]:
    worst: tuple[tuple[Any, ...], dict[str, float]] | None = None
    for arm in search_load.arms():
        await _time_arm(store, arm)  # warm the plan and the cache
        ms = stats.p50_p95([await _time_arm(store, arm) for _ in range(reps)])
        if worst is None or ms["p95"] > worst[1]["p95"]:
            worst = (arm, ms)
    assert worst is not None
    return worst


async def _measure(rows: int, reps: int, batch: int) -> dict[str, Any]:
    from flowdeck.store import retention
    from flowdeck.store.clock import SYSTEM_CLOCK

    store = flowdeck_env.make_store()
    arm, before = await _worst_arm(store, reps)
    ended_before = datetime.fromisoformat(search_load.W7_BASE) + timedelta(seconds=rows + 1)
    what = retention.Purge(ended_before.astimezone(UTC))
    purging = asyncio.create_task(
        retention.purge(store, what, batch=batch, pause=timedelta(0), clock=SYSTEM_CLOCK)
    )
    began = time.perf_counter()
    during: list[float] = []
    while not purging.done():
        during.append(await _time_arm(store, arm))
    purged = await purging
    seconds = time.perf_counter() - began
    return {
        "arm": arm[0],
        "purged": purged,
        "purge_seconds": seconds,
        "rows_per_second": purged / seconds if seconds else 0.0,
        "arm_before_ms": before,
        "arm_during_ms": stats.p50_p95(during) if during else None,
        "searches_during": len(during),
    }


def run(rows: int, reps: int, batch: int = 500) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", PURGE_DB)
    load_seconds = _load(rows)
    expected = sum(1 for i in range(1, rows + 1) if search_load.traits(i)["kind"] in ENDED)
    before = _table_rows()
    found = asyncio.run(_measure(rows, reps, batch))
    after = _table_rows()
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "rows": rows,
        "batch": batch,
        "load_seconds": load_seconds,
        **found,
        "expected": expected,
        "exact": found["purged"] == expected and after["execution"] == rows - expected,
        "ledger_rows_purged": sum(before[t] - after[t] for t in ("event", "field", "wait")),
        "tables_before": before,
        "tables_after": after,
    }
