"""W19: W1 through PgBouncer (transaction mode) against W1 straight to PostgreSQL, alternated in pairs
(issue 32, point 1).

`python -m bench.pooled_w1 w19 --executions 2000 --steps 10 --workers 8 --rounds 10`

Each round is W1 in one worker process (`bench.workloads.run_w1_workers`: the executions created first,
straight to PostgreSQL, the clock from "go" to the last completion) on the `flowdeck_bench_w19` database,
emptied per round. Rounds alternate direct, pooled, direct, pooled, …, as W18 does (bench/traced_w1.py): a
machine that slows down for a while slows both arms, and the ratio is reported per pair as well as over the
whole run.

The pooled arm's worker runs as a deployment behind a pooler is configured: every connection of its store
through a private PgBouncer's transaction pool (bench/pgbouncer.py; `FLOWDECK_BENCH_PGPORT` points the
bench's database URL at it), `FLOWDECK_TRANSACTION_POOLER=1` (no prepared statements, no session options:
store/django/pooling.py), and the LISTEN connection through the pooler's session-mode entry. The pooler
runs for the whole run; its own CPU is measured per pooled round (it is a process on the same cores).
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


def _pooled_env(bouncer: pgbouncer.PgBouncer) -> dict[str, str]:
    return {
        "FLOWDECK_BENCH_PGPORT": str(bouncer.port),
        "FLOWDECK_TRANSACTION_POOLER": "1",
        "FLOWDECK_LISTEN_DATABASE_URL": bouncer.url(DATABASE, pg.USER, session=True),
    }


def _round(ns: argparse.Namespace, bouncer: pgbouncer.PgBouncer, pooled: bool) -> dict[str, Any]:
    pg.empty_tables(DATABASE, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    workflow_id = f"chain{ns.steps}"
    asyncio.run(workloads.start_chains(workflow_id, ns.steps, ns.executions))
    nodes = ns.executions * ns.steps
    meter = cpu.Meter({"pooler": [bouncer.process.pid]})
    env = _pooled_env(bouncer) if pooled else {}
    began, ended, _, cpu_seconds, database_cpu = workloads.run_w1_workers(ns, workflow_id, env)
    return {
        "pooled": pooled,
        "seconds": ended - began,
        "nodes_per_s": nodes / (ended - began),
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_cpu / nodes * 1e6,
        # the pooler's CPU over the whole round (workers' start and stop included): idle in direct rounds
        "pooler_cpu_us_per_node": meter.spent()["pooler"] / nodes * 1e6,
    }


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Both arms' mean nodes/s, their ratio, and each pair's ratio (their spread)."""
    direct = [r["nodes_per_s"] for r in rounds if not r["pooled"]]
    pooled = [r["nodes_per_s"] for r in rounds if r["pooled"]]
    pairs = [b / a for a, b in zip(direct, pooled, strict=False)]
    return {
        "nodes_per_s_direct": mean(direct),
        "nodes_per_s_pooled": mean(pooled),
        "ratio": mean(pooled) / mean(direct),
        "pair_ratios": [round(p, 3) for p in pairs],
        "pair_ratio_min": min(pairs),
        "pair_ratio_max": max(pairs),
        "cpu_us_per_node_direct": mean(r["cpu_us_per_node"] for r in rounds if not r["pooled"]),
        "cpu_us_per_node_pooled": mean(r["cpu_us_per_node"] for r in rounds if r["pooled"]),
        "pooler_cpu_us_per_node": mean(r["pooler_cpu_us_per_node"] for r in rounds if r["pooled"]),
    }


def cmd_w19(ns: argparse.Namespace) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", DATABASE)  # the coordinator creates the executions, directly
    rounds = []
    try:
        with pgbouncer.running(
            server_host=pg.HOST, server_port=pg.PORT, databases=[DATABASE], users=[pg.USER]
        ) as bouncer:
            for n in range(ns.rounds * 2):
                rounds.append(_round(ns, bouncer, pooled=n % 2 == 1))
                arm = "pooled" if rounds[-1]["pooled"] else "direct"
                print(f"W19 round {n + 1} ({arm}): {rounds[-1]['nodes_per_s']:,.0f} nodes/s", file=sys.stderr)
            served = bouncer.transactions(pg.USER).get(DATABASE, 0)
            version = pgbouncer.version()
    finally:
        from django.db import connections

        connections.close_all()
        pg.drop(DATABASE)
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "executions": ns.executions,
        "steps": ns.steps,
        "workers": ns.workers,
        "processes": 1,
        "pooler": f"{version}, pool_mode=transaction, no prepared statements",
        "pooled_transactions": served,
        "rounds": rounds,
    } | _summary(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.pooled_w1")
    parser.add_argument("command", choices=["w19"])
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="pairs of rounds: direct, then pooled")
    parser.add_argument("--timeout", type=float, default=300.0, help="for each W1 run")
    ns = parser.parse_args(argv)
    ns.database, ns.procs, ns.profile = DATABASE, 1, None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `finally`, stopping every child
    protocol.emit(cmd_w19(ns))
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
