"""W19: W1 through PgBouncer against W1 straight to PostgreSQL, the arms alternated (issue 32, point 1).

`python -m bench.pooled_w1 w19 --executions 2000 --steps 10 --workers 8 --rounds 10`

Each round is W1 in one worker process (`bench.workloads.run_w1_workers`: the executions created first,
straight to PostgreSQL, the clock from "go" to the last completion) on the `flowdeck_bench_w19` database,
emptied per round. Rounds take the arms in turn, as W18 does (bench/traced_w1.py): a machine that slows
down for a while slows every arm, and each pooled arm's ratio is reported per turn as well as over the run.

The arms (docs/pooling.md):
- `direct`: every connection straight to PostgreSQL, as W1 runs.
- `pooled`: every connection of the store through a private PgBouncer's transaction pool (bench/pgbouncer.py;
  `FLOWDECK_BENCH_PGPORT` points the bench's database URL at it) with `FLOWDECK_TRANSACTION_POOLER=1`: no
  prepared statements, no session options (store/django/pooling.py); LISTEN through the pooler's
  session-mode entry.
- `session_writes`: the same, but group commit's two connections through the session-mode entry too
  (`FLOWDECK_WRITES_DATABASE_URL`), so they prepare their statements as they do direct.
- `direct_writes`: the same, but the writers and LISTEN straight to PostgreSQL (they hold a server
  connection each either way): only the store's threads go through the pooler.
The pooler runs for the whole run; its own CPU is measured per round (it shares the machine's cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from statistics import mean
from typing import Any

from bench import cpu, flowdeck_env, pg, pgbouncer, protocol, workloads
from bench.worker import add_engine_arguments

DATABASE = pg.FLOWDECK_DB + "_w19"


ARMS = ("direct", "pooled", "session_writes", "direct_writes")


def _arm_env(bouncer: pgbouncer.PgBouncer, arm: str) -> dict[str, str]:
    """The worker's environment for `arm`: a deployment's settings behind the pooler."""
    if arm == "direct":
        return {}
    session = pg.url(DATABASE) if arm == "direct_writes" else bouncer.url(DATABASE, pg.USER, session=True)
    env = {
        "FLOWDECK_BENCH_PGPORT": str(bouncer.port),
        "FLOWDECK_TRANSACTION_POOLER": "1",
        "FLOWDECK_LISTEN_DATABASE_URL": session,
    }
    return env if arm == "pooled" else env | {"FLOWDECK_WRITES_DATABASE_URL": session}


def _round(ns: argparse.Namespace, bouncer: pgbouncer.PgBouncer, arm: str) -> dict[str, Any]:
    pg.empty_tables(DATABASE, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    workflow_id = f"chain{ns.steps}"
    asyncio.run(workloads.start_chains(workflow_id, ns.steps, ns.executions))
    nodes = ns.executions * ns.steps
    meter = cpu.Meter({"pooler": [bouncer.process.pid]})
    began, ended, _, cpu_seconds, database_cpu = workloads.run_w1_workers(
        ns, workflow_id, _arm_env(bouncer, arm)
    )
    return {
        "arm": arm,
        "seconds": ended - began,
        "nodes_per_s": nodes / (ended - began),
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_cpu / nodes * 1e6,
        # the pooler's CPU over the whole round (workers' start and stop included): idle in direct rounds
        "pooler_cpu_us_per_node": meter.spent()["pooler"] / nodes * 1e6,
    }


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each arm's mean nodes/s and CPU, each pooled arm's ratio to direct, and its ratio per turn (the
    spread)."""
    by_arm = {arm: [r for r in rounds if r["arm"] == arm] for arm in ARMS}
    found: dict[str, Any] = {}
    for arm, its in by_arm.items():
        found[f"nodes_per_s_{arm}"] = mean(r["nodes_per_s"] for r in its)
        found[f"cpu_us_per_node_{arm}"] = mean(r["cpu_us_per_node"] for r in its)
        found[f"database_cpu_us_per_node_{arm}"] = mean(r["database_cpu_us_per_node"] for r in its)
        found[f"pooler_cpu_us_per_node_{arm}"] = mean(r["pooler_cpu_us_per_node"] for r in its)
    direct = [r["nodes_per_s"] for r in by_arm["direct"]]
    for arm in ARMS[1:]:
        turns = [r["nodes_per_s"] / d for r, d in zip(by_arm[arm], direct, strict=False)]
        found[f"ratio_{arm}"] = found[f"nodes_per_s_{arm}"] / found["nodes_per_s_direct"]
        found[f"turn_ratios_{arm}"] = [round(t, 3) for t in turns]
        found[f"turn_ratio_min_{arm}"], found[f"turn_ratio_max_{arm}"] = min(turns), max(turns)
    return found


def cmd_w19(ns: argparse.Namespace) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", DATABASE)  # the coordinator creates the executions, directly
    rounds = []
    try:
        with pgbouncer.running(
            server_host=pg.HOST, server_port=pg.PORT, databases=[DATABASE], users=[pg.USER]
        ) as bouncer:
            for n in range(ns.rounds * len(ARMS)):
                arm = ARMS[n % len(ARMS)]
                rounds.append(_round(ns, bouncer, arm))
                print(f"W19 round {n + 1} ({arm}): {rounds[-1]['nodes_per_s']:,.0f} nodes/s", file=sys.stderr)
            served = bouncer.transactions(pg.USER).get(DATABASE, 0)
            version = pgbouncer.version()
    finally:
        from django.db import connections

        connections.close_all()
        pg.clear(DATABASE)  # emptied, not dropped: see pg.recreate
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "executions": ns.executions,
        "steps": ns.steps,
        "workers": ns.workers,
        "processes": 1,
        "pooler": f"{version}, pool_mode=transaction (session for LISTEN; session_writes: for the writers)",
        "pooled_transactions": served,
        "rounds": rounds,
    } | _summary(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.pooled_w1")
    parser.add_argument("command", choices=["w19"])
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="turns of the four arms")
    parser.add_argument("--timeout", type=float, default=300.0, help="for each W1 run")
    ns = parser.parse_args(argv)
    ns.database, ns.procs, ns.profile = DATABASE, 1, None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `finally`, stopping every child
    protocol.emit(cmd_w19(ns))
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
