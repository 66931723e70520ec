"""W14: W1's chains under a concurrency limit of one running per key, against unlimited W1 in the same run.

`python -m bench.keyed_w14 w14 --executions 10000 --keys 1000 --steps 10 --workers 8 --rounds 3`

Rounds alternate: unlimited W1 (the `chainN` flow; its workers serve no limited flow, so their claims take
the hot path), then the same executions of `keyedN` (the chain under `Concurrency(key="key", per_key=1)`,
keys dealt round-robin; its workers serve it, so their claims count slots: `store/django/concurrency.py`).
Each round is `bench.workloads.run_w1_workers`: created first, the clock from "go" to the last completion.
The ratio of the limited arm's nodes/s to the unlimited arm's is the figure (target ≥ 0.8). Then the history
is read: each execution ran from its first StepStarted to its last StepCompleted, and the most of one key's
intervals overlapping at any instant must be 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections import defaultdict
from statistics import mean
from typing import Any

from bench import cpu, flowdeck_env, pg, protocol, workloads
from bench.flows import KEYED_ENV
from bench.worker import add_engine_arguments

DATABASE = pg.FLOWDECK_DB + "_w14"


async def start_keyed(steps: int, count: int, keys: int) -> None:
    """Create `count` executions of the limited chain, key `k<n % keys>`; close the store after."""
    from bench.flows import keyed
    from flowdeck.engine.engine import FlowEngine

    store = flowdeck_env.make_store()
    starter = FlowEngine(store, (), workers=1)
    workflow_id = f"keyed{steps}"
    await starter.register(workflow_id, keyed(steps))
    for first in range(0, count, 16):
        await asyncio.gather(
            *(
                starter.workflows.start(
                    workflow_id, execution_id=f"k-{n:06d}", inputs={"key": f"k{n % keys}"}
                )
                for n in range(first, min(count, first + 16))
            )
        )
    await store.aclose()


def most_running_per_key() -> int:
    """The most executions of one key running at any instant, read from the history."""
    with pg.connect(DATABASE) as conn:
        rows = conn.execute(
            "SELECT e.concurrency_key, min(v.timestamp) FILTER (WHERE v.kind = 'StepStarted'),"
            " max(v.timestamp) FILTER (WHERE v.kind = 'StepCompleted')"
            " FROM flowstore_event v JOIN flowstore_execution e ON e.id = v.execution_id"
            " WHERE e.concurrency_key IS NOT NULL GROUP BY e.id, e.concurrency_key"
        ).fetchall()
    edges: dict[str, list[tuple[Any, int]]] = defaultdict(list)
    for key, began, ended in rows:
        edges[key] += [(began, 1), (ended, -1)]
    most = 0
    for marks in edges.values():
        running = 0
        for _, step in sorted(marks, key=lambda m: (m[0], m[1])):  # an end before a start at one instant
            running += step
            most = max(most, running)
    return most


def _round(ns: argparse.Namespace, limited: bool) -> dict[str, Any]:
    pg.empty_tables(DATABASE, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    if limited:
        asyncio.run(start_keyed(ns.steps, ns.executions, ns.keys))
        workflow_id, env = f"keyed{ns.steps}", {KEYED_ENV: str(ns.steps)}
    else:
        asyncio.run(workloads.start_chains(f"chain{ns.steps}", ns.steps, ns.executions))
        workflow_id, env = f"chain{ns.steps}", {}
    # the bench database's sessions alone (the workers' and the completion probe's), read before the
    # workers stop: the server's whole CPU counts other sessions' work on a shared machine
    sessions = cpu.Meter({}, sessions_of=DATABASE)
    spent: dict[str, float] = {}
    began, ended, _, cpu_seconds, database_seconds = workloads.run_w1_workers(
        ns, workflow_id, env, lambda: spent.update(sessions.spent())
    )
    nodes = ns.executions * ns.steps
    found = {
        "limited": limited,
        "seconds": ended - began,
        "nodes_per_s": nodes / (ended - began),
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_seconds / nodes * 1e6,
        "sessions_cpu_us_per_node": spent["sessions"] / nodes * 1e6,
    }
    if limited:
        found["most_running_per_key"] = most_running_per_key()
    return found


def cmd_w14(ns: argparse.Namespace) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", DATABASE)
    rounds = []
    try:
        for n in range(ns.rounds * 2):
            rounds.append(_round(ns, n % 2 == 1))
            brief = rounds[-1]
            arm = f"1 per key, at most {brief['most_running_per_key']}" if brief["limited"] else "unlimited"
            print(f"W14 round {n + 1} ({arm}): {brief['nodes_per_s']:,.0f} nodes/s", file=sys.stderr)
    finally:
        from django.db import connections

        connections.close_all()
        pg.clear(DATABASE)  # emptied, not dropped: see pg.recreate
    unlimited = [r["nodes_per_s"] for r in rounds if not r["limited"]]
    limited = [r["nodes_per_s"] for r in rounds if r["limited"]]
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "executions": ns.executions,
        "keys": ns.keys,
        "steps": ns.steps,
        "workers": ns.workers,
        "rounds": rounds,
        "nodes_per_s_unlimited": mean(unlimited),
        "nodes_per_s_limited": mean(limited),
        "ratio": mean(limited) / mean(unlimited),
        "most_running_per_key": max(r["most_running_per_key"] for r in rounds if r["limited"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.keyed_w14")
    parser.add_argument("command", choices=["w14"])
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1, help="pairs of rounds: unlimited, then limited")
    parser.add_argument("--timeout", type=float, default=600.0, help="for each round")
    ns = parser.parse_args(argv)
    ns.database, ns.procs, ns.profile = DATABASE, 1, None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `finally`, stopping every child
    began = time.monotonic()
    result = cmd_w14(ns)
    result["wall_seconds"] = time.monotonic() - began
    protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
