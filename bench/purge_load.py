"""W13: purge the ended executions of W7's mix, rows per second, while W7's worst search arm is measured.

`rows` executions of W7's mix (`search_load.load`, the same recipe: 75 % of them ended) plus four events
each go into a database of their own. The ended ones are created `SHIFT` earlier than the recipe says (the
same order and spacing): as in a real history, the days a retention cutoff has passed hold ended executions
only, while the unended ones are recent. First every W7 arm is timed (`reps` each) to find the worst p95;
then every ended execution is purged (`retention.purge`, `batch` per transaction, no pause: the CLI's
`flowdeck purge --pause 0`) while a second task searches that worst arm in a loop on the same store. Reported:
the executions purged and their rows per second, the ledger rows that went with them, and the worst arm's
p50/p95 before and during the purge. The purge's count is checked against the recipe's, and afterwards no
ended execution is left and every unended one is.

Two arms on copies of the same load, in one run: `rows`, today's batched delete alone (the store's
`whole_days` off), and `partitions`, retention by whole day partitions (migration 0018,
store/django/partitions.py) with the batched delete for what they leave; each twice (rows, partitions,
partitions, rows). The top-level figures are the first rows arm's, `partitions` the first partitions arm's,
`rates` and `arm_during_p95_ms` every round's, `partition_speedup` the ratio of their mean rates.

    python -m bench.workloads w13 --rows 20000 --reps 20       # small; the lead runs --rows 1333334
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import flowdeck_env, pg, search_load, stats

PURGE_DB = f"flowdeck_bench_purge{pg.SUFFIX}"
TEMPLATE_DB = f"flowdeck_bench_purge_loaded{pg.SUFFIX}"
ENDED = ("completed", "failed", "cancelled")

SHIFT = timedelta(days=30)
ARMS = ("rows", "partitions")

SHIFT_ENDED = """
update flowstore_execution set created = created - %(shift)s, updated = updated - %(shift)s,
    ended = ended - %(shift)s
where status_kind in ('completed', 'failed', 'cancelled')
"""

# each execution's events carry its creation as their partition key (migration 0018)
LOAD_EVENTS = """
insert into flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)
select e.id, k, e.flow_id, (array['Created', 'ExecutionClaimed', 'StepStarted', 'StepCompleted'])[k],
    e.created, '{}', e.created
from flowstore_execution e cross join generate_series(1, 4) as k
order by e.created, k
"""


async def _prepare_days(rows: int) -> None:
    store = flowdeck_env.make_store()
    base = datetime.fromisoformat(search_load.W7_BASE)
    await store.prepare_history((base - SHIFT).date(), (base + timedelta(seconds=rows)).date())
    await store.aclose()


def _load(rows: int) -> float:
    began = time.perf_counter()
    search_load.load(rows, PURGE_DB)
    asyncio.run(_prepare_days(rows))
    with pg.connect(PURGE_DB) as conn:
        conn.execute(SHIFT_ENDED, {"shift": SHIFT})
        conn.execute(LOAD_EVENTS)
        conn.execute("vacuum analyze flowstore_execution")
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


async def _measure(
    rows: int, reps: int, batch: int, whole_days: bool, arm: tuple[Any, ...] | None
) -> dict[str, Any]:
    from flowdeck.store import retention
    from flowdeck.store.clock import SYSTEM_CLOCK

    store = flowdeck_env.make_store()
    store.whole_days = whole_days
    if arm is None:
        arm, before = await _worst_arm(store, reps)
    else:
        await _time_arm(store, arm)  # warm the plan and the cache
        before = stats.p50_p95([await _time_arm(store, arm) for _ in range(reps)])
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
    await store.aclose()
    return {
        "arm": arm,
        "purged": purged,
        "purge_seconds": seconds,
        "rows_per_second": purged / seconds if seconds else 0.0,
        "arm_before_ms": before,
        "arm_during_ms": stats.p50_p95(during) if during else None,
        "searches_during": len(during),
        "partitions_left": await asyncio.to_thread(_day_partitions),
    }


def _day_partitions() -> int:
    with pg.connect(PURGE_DB) as conn:
        found = conn.execute(
            "select count(*) from pg_inherits where inhparent = 'flowstore_event'::regclass"
        ).fetchone()
    return int(found[0]) if found else 0


def _arm(rows: int, reps: int, batch: int, whole_days: bool, arm: Any) -> dict[str, Any]:
    """One purge of the loaded history, on a fresh copy of it (`TEMPLATE_DB`)."""
    from django.db import connections

    connections.close_all()
    with pg.connect() as conn:
        conn.execute(f'drop database if exists "{PURGE_DB}" with (force)')
        conn.execute(f'create database "{PURGE_DB}" template "{TEMPLATE_DB}"')
    expected = sum(1 for i in range(1, rows + 1) if search_load.traits(i)["kind"] in ENDED)
    before = _table_rows()
    found = asyncio.run(_measure(rows, reps, batch, whole_days, arm))
    after = _table_rows()
    return {
        **found,
        "expected": expected,
        "exact": found["purged"] == expected and after["execution"] == rows - expected,
        "ledger_rows_purged": sum(before[t] - after[t] for t in ("event", "field", "wait")),
        "tables_before": before,
        "tables_after": after,
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def run(rows: int, reps: int, batch: int = 500) -> dict[str, Any]:
    """The load once, then the two arms on copies of it in the order rows, partitions, partitions, rows (a
    machine that slows down or speeds up during the run weighs on both alike), all searching the worst
    W7 arm of the first."""
    from django.db import connections

    flowdeck_env.fresh_database("postgres", PURGE_DB)
    load_seconds = _load(rows)
    connections.close_all()
    pg.drop(TEMPLATE_DB)
    with pg.connect() as conn:
        conn.execute(f'create database "{TEMPLATE_DB}" template "{PURGE_DB}"')
    found: dict[str, list[dict[str, Any]]] = {"rows": [], "partitions": []}
    arm = None
    try:
        for name in ("rows", "partitions", "partitions", "rows"):
            result = _arm(rows, reps, batch, name == "partitions", arm)
            arm = result["arm"]
            found[name].append({**result, "arm": arm[0]})
    finally:
        pg.drop(TEMPLATE_DB)
    rates = {name: [r["rows_per_second"] for r in runs] for name, runs in found.items()}
    during = {
        name: [r["arm_during_ms"]["p95"] for r in runs if r["arm_during_ms"]] for name, runs in found.items()
    }
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "rows": rows,
        "batch": batch,
        "load_seconds": load_seconds,
        **found["rows"][0],
        "partitions": found["partitions"][0],
        "rates": rates,
        "arm_during_p95_ms": during,
        "exact_all": all(r["exact"] for runs in found.values() for r in runs),
        "partition_speedup": _mean(rates["partitions"]) / _mean(rates["rows"]),
    }
