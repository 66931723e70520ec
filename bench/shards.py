"""W20: the claim and W1 across N shards, each shard a database of its own (issue 32, point 5).

`python -m bench.shards --shards 1 2 4 --executions 2000 --steps 10 --workers 8 --procs 4 --rounds 2`

The shards are `flowdeck_bench_shard_<i>` on the bench's PostgreSQL server (created, migrated and dropped
here), each a whole Flowdeck store, as docs/sharding.md lays out. The same total work at every N: the
executions `chain10-000000…` are started on the shard their id hashes to (`shard_of`, the router a
sharded deployment's starts would use), and the same `--procs` worker processes of `--workers // --procs`
workers each are assigned `--procs // N` to a shard, so N changes only how many databases the work is
spread over, not how many processes run it.

Each round, for every N (the order reversed every other round, so a machine that slows down for a while
slows each N): the shards emptied, the executions started, then
- the claim arm (bench/shard_claims.py): `--claimers` connections, `--claimers // N` per shard, claim
  every row with the store's claim statement, `--batch-size` a statement; the rows are then put back;
- W1: the worker processes go, timed to the last completion on every shard (bench/workloads.py's W1).
Per N: nodes/s and claims/s, the spread over rounds, the CPU cores the workers, the server and the rest
of the machine used while W1 ran (what bounds it on this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import signal
import sys
import time
from statistics import mean
from typing import Any

from bench import cpu, flowdeck_env, pg, protocol, shard_claims, workloads
from bench.worker import add_engine_arguments

FLOW = "chain{steps}"
SERVED_STEPS = (3, 10)  # `bench.flows.all_flows()`'s chains


def shard_database(index: int) -> str:
    return f"flowdeck_bench_shard_{index}{pg.SUFFIX}"


def shard_of(execution_id: str, shards: int) -> int:
    """The shard an execution lives on: a stable hash of its id (the same in every process and release,
    unlike Python's salted `hash`), modulo the shard count."""
    digest = hashlib.blake2b(execution_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def _alias(index: int) -> str:
    return "default" if index == 0 else f"shard_{index}"


def _configure(count: int) -> None:
    """Django on shard 0 as `default`, every other shard as an alias `shard_<i>` beside it, each migrated."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    for index in range(count):
        pg.recreate(shard_database(index))
    flowdeck_env.start_django("postgres", shard_database(0))
    for index in range(1, count):
        config = dict(settings.DATABASES["default"], NAME=shard_database(index))
        settings.DATABASES[_alias(index)] = config
        configured = connections.configure_settings({"default": settings.DATABASES["default"], "x": config})
        connections.settings[_alias(index)] = configured["x"]
    for index in range(count):
        call_command("migrate", database=_alias(index), verbosity=0, interactive=False)
    connections.close_all()


async def _start_routed(flow_id: str, steps: int, executions: int, shards: int) -> list[int]:
    """Start every execution on its shard (one store per shard, as a sharded start would hold); answers how
    many each shard got."""
    from bench.flows import chain
    from flowdeck.engine.engine import FlowEngine

    ids = [f"{flow_id}-{i:06d}" for i in range(executions)]
    routed: list[list[str]] = [[] for _ in range(shards)]
    for execution_id in ids:
        routed[shard_of(execution_id, shards)].append(execution_id)
    for index, its in enumerate(routed):
        store = flowdeck_env.store_class()(using=_alias(index))
        starter = FlowEngine(store, (), workers=1)
        await starter.register(flow_id, chain(steps))
        await workloads.start_many(starter, flow_id, its)
        await store.aclose()
    return [len(its) for its in routed]


def _machine_jiffies() -> tuple[int, int]:
    """The whole machine's busy and total CPU time so far (/proc/stat's first line), in clock ticks."""
    with open("/proc/stat") as stat:
        fields = [int(f) for f in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


_COMPLETED = (
    "select coalesce(sum(n), 0) from flowstore_status_tally where flow_id = %s and status_kind = 'completed'"
)


def _wait_all(ns: argparse.Namespace, flow_id: str, expected: list[int]) -> tuple[float, int]:
    """Poll every shard until each completed its executions; answers when, and the polls made. The polls
    read the status tally (migration 0010's deltas, written in each status change's own transaction), not
    the execution table, so the execution rows read per node are the workers' own."""
    conns = [pg.connect(shard_database(i)) for i in range(len(expected))]
    polls = 0
    try:
        deadline = time.monotonic() + ns.timeout
        pending = set(range(len(expected)))
        while pending:
            done = set()
            for i in pending:
                polls += 1
                row = conns[i].execute(_COMPLETED, (flow_id,)).fetchone()
                if row is not None and int(row[0]) >= expected[i]:
                    done.add(i)
            pending -= done
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"W20: shards {sorted(pending)} unfinished after {ns.timeout:g}s")
            if pending:
                time.sleep(0.02)
        return time.perf_counter(), polls
    finally:
        for conn in conns:
            conn.close()


def _spawn(ns: argparse.Namespace, shards: int) -> list[Any]:
    """`--procs // shards` worker processes per shard, each ready and waiting for the go."""
    children: list[Any] = []
    try:
        for index in range(shards):
            per_shard = argparse.Namespace(**vars(ns))
            per_shard.database = shard_database(index)
            children += workloads.spawn_workers(
                per_shard, ns.procs // shards, ns.workers // ns.procs, wait_go=True
            )
        return workloads.await_ready(children)
    except BaseException:
        workloads.stop_all(children)
        raise


def _commits(shards: int) -> int:
    """The shards' commit counters, summed (read once they stopped moving: bench/pg.py)."""
    return sum(pg.settled_xact_commit(shard_database(i)) for i in range(shards))


def _execution_rows_read(shards: int) -> int:
    """Rows of the shards' execution tables read so far, by index and by sequential scans (the server's
    statistics; read, as the commits are, after the sessions that did the reading ended)."""
    found = 0
    for index in range(shards):
        with pg.connect(shard_database(index)) as conn:
            conn.execute("select pg_stat_clear_snapshot()")
            row = conn.execute(
                "select coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) from pg_stat_user_tables"
                " where relname = 'flowstore_execution'"
            ).fetchone()
        found += int(row[0]) if row else 0
    return found


def _run_w1(ns: argparse.Namespace, shards: int, flow_id: str, expected: list[int]) -> dict[str, Any]:
    """The worker processes told to go at once; W1's clock, CPU and commits (W3's way: counted after the
    workers' sessions ended, less the bench's own completion polls)."""
    before, read_before = _commits(shards), _execution_rows_read(shards)
    children = _spawn(ns, shards)
    try:
        meter = cpu.Meter({"workers": [child.pid for child in children]})
        busy_before, total_before = _machine_jiffies()
        began = time.perf_counter()
        for child in children:
            protocol.go(child)
        ended, polls = _wait_all(ns, flow_id, expected)
        spent = meter.spent()
        busy_after, total_after = _machine_jiffies()
    finally:
        workloads.stop_all(children)
    seconds = ended - began
    nodes = ns.executions * ns.steps
    machine = (busy_after - busy_before) / max(1, total_after - total_before) * (os.cpu_count() or 1)
    cores = {"workers": spent["workers"] / seconds, "database": spent["database"] / seconds}
    return {
        "seconds": seconds,
        "nodes_per_s": nodes / seconds,
        "cpu_us_per_node": spent["workers"] / nodes * 1e6,
        "database_cpu_us_per_node": spent["database"] / nodes * 1e6,
        "commits_per_node": (_commits(shards) - before - polls) / nodes,
        "execution_rows_read_per_node": (_execution_rows_read(shards) - read_before) / nodes,
        "cores": cores | {"machine": machine, "others": max(0.0, machine - sum(cores.values()))},
    }


def _round(ns: argparse.Namespace, shards: int) -> dict[str, Any]:
    """One N: the shards in use emptied, the executions started on theirs, the claim arm, then W1."""
    flow_id = FLOW.format(steps=ns.steps)
    databases = [shard_database(i) for i in range(shards)]
    for database in databases:
        pg.empty_tables(database, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    expected = asyncio.run(_start_routed(flow_id, ns.steps, ns.executions, shards))
    from django.db import connections

    connections.close_all()
    claims = shard_claims.claim_all(databases, flow_id, ns.claimers, ns.batch_size)
    if claims.claimed != ns.executions:
        raise RuntimeError(f"W20 claim arm, {shards} shards: claimed {claims.claimed} of {ns.executions}")
    for database in databases:
        shard_claims.reset(database)
    w1 = _run_w1(ns, shards, flow_id, expected)
    return {"shards": shards, "executions_per_shard": expected} | claims.as_dict(ns.executions) | w1


def _summary(rounds: list[dict[str, Any]], counts: list[int]) -> dict[str, Any]:
    """Per N: the mean of each figure over its rounds, the spread (min, max) of nodes/s and claims/s, and
    each N's nodes/s and claims/s as a ratio to the first N's."""
    found: dict[str, Any] = {}
    for n in counts:
        its = [r for r in rounds if r["shards"] == n]
        nodes = [r["nodes_per_s"] for r in its]
        claims = [r["claims_per_s"] for r in its]
        found[str(n)] = {
            "nodes_per_s": mean(nodes),
            "nodes_per_s_min": min(nodes),
            "nodes_per_s_max": max(nodes),
            "claims_per_s": mean(claims),
            "claims_per_s_min": min(claims),
            "claims_per_s_max": max(claims),
            "cpu_us_per_node": mean(r["cpu_us_per_node"] for r in its),
            "database_cpu_us_per_node": mean(r["database_cpu_us_per_node"] for r in its),
            "commits_per_node": mean(r["commits_per_node"] for r in its),
            "execution_rows_read_per_node": mean(r["execution_rows_read_per_node"] for r in its),
            "claim_database_cpu_us_per_row": mean(r["claim_database_cpu_us_per_row"] for r in its),
            "cores": {k: mean(r["cores"][k] for r in its) for k in its[0]["cores"]},
        }
    base = found[str(counts[0])]
    for n in counts:
        found[str(n)]["nodes_ratio"] = found[str(n)]["nodes_per_s"] / base["nodes_per_s"]
        found[str(n)]["claims_ratio"] = found[str(n)]["claims_per_s"] / base["claims_per_s"]
    return {"by_shards": found}


def table(result: dict[str, Any]) -> str:
    """The figures as an operator reads them: one line per N."""
    head = (
        f"W20: {result['executions']} x {result['steps']} over N shards; {result['procs']} worker processes "
        f"x {result['workers'] // result['procs']} workers; {result['claimers']} claimers; "
        f"{result['rounds_per_n']} rounds per N"
    )
    lines = [
        head,
        "  N   nodes/s (min-max)        ratio  claims/s (min-max)       ratio  "
        "cores: workers  server  others  commits/node  rows read/node",
    ]
    for n, s in result["by_shards"].items():
        c = s["cores"]
        lines.append(
            f"{n:>3}  {s['nodes_per_s']:>7,.0f} ({s['nodes_per_s_min']:,.0f}-{s['nodes_per_s_max']:,.0f})"
            f"  {s['nodes_ratio']:>8.2f}x  {s['claims_per_s']:>7,.0f} ({s['claims_per_s_min']:,.0f}-"
            f"{s['claims_per_s_max']:,.0f})  {s['claims_ratio']:>8.2f}x  "
            f"{c['workers']:>13.2f}  {c['database']:>6.2f}  {c['others']:>6.2f}"
            f"  {s['commits_per_node']:>12.2f}  {s['execution_rows_read_per_node']:>14.1f}"
        )
    return "\n".join(lines)


def cmd_w20(ns: argparse.Namespace) -> dict[str, Any]:
    counts = ns.shards
    rounds: list[dict[str, Any]] = []
    _configure(max(counts))
    try:
        for turn in range(ns.rounds):
            for n in counts if turn % 2 == 0 else list(reversed(counts)):
                rounds.append(_round(ns, n))
                r = rounds[-1]
                print(
                    f"W20 round {turn + 1}, {n} shard(s): {r['nodes_per_s']:,.0f} nodes/s, "
                    f"{r['claims_per_s']:,.0f} claims/s",
                    file=sys.stderr,
                )
    finally:
        from django.db import connections

        connections.close_all()
        for index in range(max(counts)):
            pg.drop(shard_database(index))
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "server": pg.server_version(),
        "cpus": os.cpu_count(),
        "executions": ns.executions,
        "steps": ns.steps,
        "workers": ns.workers,
        "procs": ns.procs,
        "claimers": ns.claimers,
        "batch_size": ns.batch_size,
        "rounds_per_n": ns.rounds,
        "rounds": rounds,
    } | _summary(rounds, counts)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.shards")
    add_engine_arguments(parser)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4], help="the shard counts, N")
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--procs", type=int, default=4, help="worker processes in all, whatever N")
    parser.add_argument("--claimers", type=int, default=8, help="claim arm connections in all")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every N")
    parser.add_argument("--timeout", type=float, default=300.0, help="for each W1 run")
    ns = parser.parse_args(argv)
    for n in ns.shards:
        if n < 1 or ns.procs % n or ns.claimers % n:
            parser.error(
                f"--shards {n}: each N must be at least 1 and divide --procs ({ns.procs}) and "
                f"--claimers ({ns.claimers}), so every shard gets the same share"
            )
    if ns.workers % ns.procs or ns.executions < 1 or ns.rounds < 1:
        parser.error("--workers must be a multiple of --procs; --executions and --rounds at least 1")
    if ns.steps not in SERVED_STEPS:  # bench.worker serves these chains only: others would wait forever
        parser.error(
            f"--steps must be one of {', '.join(map(str, SERVED_STEPS))} (the chains bench.worker serves)"
        )
    ns.backend, ns.database, ns.profile = "postgres", shard_database(0), None
    return ns


def main(argv: list[str] | None = None) -> None:
    ns = _arguments(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `finally`, dropping the shards
    result = cmd_w20(ns)
    print(table(result), file=sys.stderr)
    protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
