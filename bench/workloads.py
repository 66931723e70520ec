"""Flowdeck's side of every workload: `python -m bench.workloads <command> [options]`.

Each command runs in a fresh interpreter (Django is configured once per process) and prints one
`BENCH_RESULT <json>` line. Workers are separate OS processes (`bench.worker`) wherever the workload is
about processes (W1, W6, W9); W2 and W5 run the engine inside the measuring process, as DBOS's do.

Commit accounting (W3) reads `pg_stat_database.xact_commit` for the bench database from a connection to
another database, only after the sessions that wrote have ended (backends flush their counters when they
end). W1 first creates every execution and closes its store, then lets the workers go: the measured
window holds the workers' commits and the bench's completion polls, which are counted one by one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    cpu,
    flowdeck_env,
    pg,
    protocol,
    purge_load,
    schedule_load,
    search_load,
    statement_loop,
    stats,
)
from bench.worker import add_engine_arguments

# ---------------------------------------------------------------------------------------- plumbing


class Probe:
    """Counts rows straight from the store's tables, on its own connection; every query is counted."""

    def __init__(self, backend: str, database: str) -> None:
        self.backend = backend
        self.queries = 0
        if backend == "postgres":
            self.conn: Any = pg.connect(database)
        else:
            self.conn = sqlite3.connect(str(flowdeck_env.sqlite_path(database)), timeout=30)

    def scalar(self, sql: str, *params: Any) -> int:
        self.queries += 1
        if self.backend == "sqlite":
            sql = sql.replace("%s", "?")
        row = self.conn.execute(sql, params).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def completed(self, flow_id: str) -> int:
        return self.scalar(
            "select count(*) from flowstore_execution where flow_id = %s and status_kind = 'completed'",
            flow_id,
        )

    def wait_until(self, what: str, check: Any, want: int, timeout: float, every: float = 0.01) -> float:
        """Poll `check()` until it reaches `want`; answers the perf_counter() when it did."""
        deadline = time.monotonic() + timeout
        while True:
            if check() >= want:
                return time.perf_counter()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: {check()} of {want} after {timeout:g}s")
            time.sleep(every)

    def close(self) -> None:
        self.conn.close()


def worker_args(ns: argparse.Namespace, workers: int, **overrides: Any) -> list[str]:
    values = {
        "backend": ns.backend,
        "database": ns.database,
        "workers": workers,
        "batch_size": ns.batch_size,
        "lease": ns.lease,
        "renew_every": ns.renew_every,
        "poll_timeout": ns.poll_timeout,
    } | overrides
    args: list[str] = []
    for key, value in values.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def start_workers(
    ns: argparse.Namespace, procs: int, workers: int, env: dict[str, str] | None = None, wait_go: bool = False
) -> list[Any]:
    return await_ready(spawn_workers(ns, procs, workers, env, wait_go))


def spawn_workers(
    ns: argparse.Namespace, procs: int, workers: int, env: dict[str, str] | None = None, wait_go: bool = False
) -> list[Any]:
    args = worker_args(ns, workers) + (["--wait-go"] if wait_go else [])
    return [protocol.spawn_worker("bench.worker", args, env) for _ in range(procs)]


def await_ready(children: list[Any]) -> list[Any]:
    for child in children:
        child.ready = json.loads(protocol.wait_ready(child))
    return children


def stop_all(children: list) -> None:
    for child in children:
        protocol.stop_worker(child)


def engine(store: Any, ns: argparse.Namespace, **overrides: Any) -> Any:
    from bench import worker
    from bench.flows import all_flows
    from flowdeck.engine.engine import FlowEngine

    options = worker.engine_options(ns) | overrides
    return FlowEngine(store, all_flows(), **options)


def profile(pid: int, path: str) -> subprocess.Popen[bytes]:
    """Sample a worker process with py-spy (all threads, on-CPU) until it exits; collapsed stacks at path."""
    spy = str(Path(sys.executable).with_name("py-spy"))
    command = [spy, "record", "--pid", str(pid), "--rate", "250", "--format", "raw", "-o", path]
    command += os.environ.get("FLOWDECK_BENCH_PYSPY_ARGS", "").split()  # e.g. --gil, --idle
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def rss_kb(pid: int) -> dict[str, int]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


# ------------------------------------------------------------------------------------------ commands


def cmd_setup(ns: argparse.Namespace) -> dict[str, Any]:
    flowdeck_env.fresh_database(ns.backend, ns.database)
    return {"ok": True}


async def start_many(starter: Any, workflow_id: str, ids: list[str], in_flight: int = 16) -> None:
    """Start every id, `in_flight` at a time (enough to keep the store's threads busy)."""
    for first in range(0, len(ids), in_flight):
        chunk = ids[first : first + in_flight]
        await asyncio.gather(*(starter.workflows.start(workflow_id, execution_id=eid) for eid in chunk))


async def start_chains(workflow_id: str, steps: int, count: int, tracer_provider: Any = None) -> float:
    """Create `count` executions of the steps-long chain; close the store after. Answers the seconds.
    `tracer_provider`: the starts' spans go there (W18's traced rounds), their trace stored with each."""
    from bench.flows import chain
    from flowdeck.engine.engine import FlowEngine

    store = flowdeck_env.make_store()
    starter = FlowEngine(store, (), workers=1, tracer_provider=tracer_provider)
    began = time.perf_counter()
    await starter.register(workflow_id, chain(steps))
    await start_many(starter, workflow_id, [f"{workflow_id}-{i:06d}" for i in range(count)])
    seconds = time.perf_counter() - began
    await store.aclose()
    return seconds


def run_w1_workers(
    ns: argparse.Namespace,
    workflow_id: str,
    env: dict[str, str] | None = None,
    settled: Callable[[], None] | None = None,
) -> tuple[float, float, int, float, float]:
    """Start the worker processes, tell them to go, wait until every execution completed; answers when
    they went, when the last completed, how many completion polls the bench made meanwhile, and the CPU
    seconds the worker processes and the database server spent in between (user + system). `env`: added
    to the workers' environment; `settled`: called once measured, before the workers stop (W18: tracing
    on, and the spans they exported counted)."""
    children = start_workers(ns, ns.procs, max(1, ns.workers // ns.procs), env, wait_go=True)
    profilers = (
        [profile(child.pid, f"{ns.profile}.{i}") for i, child in enumerate(children)] if ns.profile else []
    )
    probe = Probe(ns.backend, ns.database)
    pids = [child.pid for child in children]
    try:
        meter = cpu.Meter({"workers": pids})
        began = time.perf_counter()
        for child in children:
            protocol.go(child)
        ended = probe.wait_until(
            "W1", lambda: probe.completed(workflow_id), ns.executions, timeout=ns.timeout, every=0.02
        )
        spent = meter.spent()
        if settled is not None:
            settled()
        return began, ended, probe.queries, spent["workers"], spent["database"]
    finally:
        probe.close()
        stop_all(children)
        for profiler in profilers:
            profiler.wait(timeout=60)


def cmd_w1(ns: argparse.Namespace) -> dict[str, Any]:
    """W1 (and W3 on PostgreSQL): executions × steps, all started before the workers go.

    This process creates every execution, then closes its store (its sessions end, which flushes their
    commit counters); the worker processes set up (Django, imports) without touching the database and wait;
    the clock starts when they are told to go and stops when the last execution is Completed. Commits are
    counted from then until the workers exited, less the bench's own completion polls.
    """
    postgres = ns.backend == "postgres"
    flowdeck_env.fresh_database(ns.backend, ns.database)
    workflow_id = f"chain{ns.steps}"

    before_start = pg.settled_xact_commit(ns.database) if postgres else 0
    start_seconds = asyncio.run(start_chains(workflow_id, ns.steps, ns.executions))
    before = pg.settled_xact_commit(ns.database) if postgres else 0

    if ns.log_statements and postgres:
        # Analysis runs only: the server logs every statement of new sessions on this database.
        with pg.connect() as conn:
            conn.execute(f"alter database {ns.database} set log_statement = 'all'")
    began, ended, polls, cpu_seconds, database_cpu = run_w1_workers(ns, workflow_id)
    elapsed = ended - began
    nodes = ns.executions * ns.steps
    result: dict[str, Any] = {
        "system": "flowdeck",
        "backend": ns.backend,
        "executions": ns.executions,
        "steps": ns.steps,
        "workers": ns.workers,
        "processes": ns.procs,
        "batch_size": ns.batch_size,
        "seconds": elapsed,
        "start_seconds": start_seconds,
        "nodes": nodes,
        "nodes_per_s": nodes / elapsed,
        "cpu_seconds": cpu_seconds,
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_cpu / nodes * 1e6 if postgres else None,
    }
    if postgres:
        starter_commits = before - before_start
        commits = pg.settled_xact_commit(ns.database) - before
        engine_commits = commits - polls
        result |= {
            "commits": commits,
            "bench_commits": polls,
            "starter_commits": starter_commits,
            "engine_commits": engine_commits,
            "commits_per_node": engine_commits / nodes,
            "commits_per_node_with_starts": (engine_commits + starter_commits) / nodes,
        }
    return result


def cmd_l3(ns: argparse.Namespace) -> dict[str, Any]:
    """L3: W1's executions created as W1 creates them, then run by `bench.statement_loop` (no engine)."""
    from django.db import connections

    from flowdeck.store.django.wakeups import listener_params

    flowdeck_env.fresh_database("postgres", ns.database)
    workflow_id = f"chain{ns.steps}"
    asyncio.run(start_chains(workflow_id, ns.steps, ns.executions))
    with connections["default"].cursor() as cursor:
        cursor.execute("select latest_hash from flowstore_workflow where id = %s", [workflow_id])
        (hash_,) = cursor.fetchone()
    connect = {"application_name": "flowdeck-writer", **listener_params(connections["default"])}
    connections.close_all()
    slots = ns.workers * ns.batch_size
    ceiling = statement_loop.run(connect, workflow_id, hash_, ns.executions, ns.steps, slots)
    probe = Probe("postgres", ns.database)
    try:
        completed = probe.completed(workflow_id)
    finally:
        probe.close()
    if completed != ns.executions:
        raise RuntimeError(f"L3 completed {completed} of {ns.executions} executions")
    return {
        "name": "L3",
        "clients": slots,
        "executions": ns.executions,
        "steps": ns.steps,
    } | ceiling.as_dict()


async def until(check: Any, timeout: float, every: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(every)


class Endings(logging.Handler):
    """Hears the workers' "attempt ended" log records, so W2 learns of a finish without polling the store.

    The worker logs it after `finish` committed; a completed attempt's report says "completed". If the log
    line ever changes shape the bench falls back to polling (slower, and it says so in the result)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.INFO)
        self.loop = loop
        self.waiting: dict[str, asyncio.Event] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "action", None) != "attempt_done":
            return
        report = record.args[1] if isinstance(record.args, tuple) and len(record.args) > 1 else None
        event = self.waiting.get(getattr(record, "execution_id", ""))
        if event is not None and getattr(report, "outcome", None) == "completed":
            self.loop.call_soon_threadsafe(event.set)

    def __enter__(self) -> Endings:
        worker_log = logging.getLogger("flowdeck.engine.worker")
        self.saved = (worker_log.level, worker_log.propagate)
        worker_log.setLevel(logging.INFO)
        worker_log.propagate = False  # only this handler hears the INFO lines: nothing printed per attempt
        worker_log.addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        worker_log = logging.getLogger("flowdeck.engine.worker")
        worker_log.removeHandler(self)
        worker_log.setLevel(self.saved[0])
        worker_log.propagate = self.saved[1]


def cmd_w2(ns: argparse.Namespace) -> dict[str, Any]:
    """W2: executions of a short chain, one after another; start → Completed, per execution.

    Measured two ways, one block after the other: started to run here
    (`start(..., run_here=True)`: created claimed by this engine, whose workers run it at once; the
    analog of DBOS's `start_workflow`, which runs the workflow in the calling process), the figure the
    target applies to (`ms`); and started queued (the plain `start`: the row is created, a worker is
    woken and claims it), for information (`ms_queued`)."""
    from flowdeck.store import spi

    flowdeck_env.fresh_database(ns.backend, ns.database)
    heard = {"log": 0, "poll": 0}

    async def run() -> dict[str, list[float]]:
        store = flowdeck_env.make_store()
        samples: dict[str, list[float]] = {"here": [], "queued": []}
        with Endings(asyncio.get_running_loop()) as endings:
            async with engine(store, ns) as eng:

                async def one(eid: str, run_here: bool) -> float:
                    ended = endings.waiting[eid] = asyncio.Event()
                    began = time.perf_counter()
                    await eng.workflows.start(f"chain{ns.steps}", execution_id=eid, run_here=run_here)
                    try:
                        await asyncio.wait_for(ended.wait(), timeout=5)
                        heard["log"] += 1
                    except TimeoutError:

                        async def done() -> bool:
                            state = await store.get_execution(eid)
                            return state is not None and isinstance(state.status, spi.Completed)

                        await until(done, ns.timeout)
                        heard["poll"] += 1
                    del endings.waiting[eid]
                    return (time.perf_counter() - began) * 1000

                # one block each, as DBOS runs its block: a queued execution leaves its worker polling
                # again right when the next one starts, which would be charged to the next run-here one
                for i in range(ns.executions):
                    samples["here"].append(await one(f"w2-{i:06d}", run_here=True))
                for i in range(ns.executions):
                    samples["queued"].append(await one(f"w2-queued-{i:06d}", run_here=False))
        return samples

    samples = asyncio.run(run())
    return {"system": "flowdeck", "backend": ns.backend, "executions": ns.executions, "steps": ns.steps} | {
        "ms": stats.p50_p95(samples["here"]),
        "ms_queued": stats.p50_p95(samples["queued"]),
        "completion_heard_by": heard,
    }


def cmd_w5(ns: argparse.Namespace) -> dict[str, Any]:
    """W5: workers idle in claim_ready; a signal → the next node's body starts."""
    from bench.flows import STAMPS

    flowdeck_env.fresh_database(ns.backend, ns.database)

    async def run() -> list[float]:
        store = flowdeck_env.make_store()
        samples = []
        async with engine(store, ns) as eng:
            for i in range(ns.signals):
                eid = await eng.workflows.start("listener", execution_id=f"w5-{i:06d}")

                async def parked(eid: str = eid) -> bool:
                    state = await store.get_execution(eid)
                    return state is not None and "go" in state.waits and state.executor is None

                await until(parked, ns.timeout, every=0.005)
                await asyncio.sleep(ns.idle)  # every worker back in claim_ready, blocked
                began = time.perf_counter()
                await eng.executions.signal(eid, "go", 1)

                async def stamped(eid: str = eid) -> bool:
                    return eid in STAMPS

                await until(stamped, ns.timeout, every=0.0002)
                samples.append((STAMPS[eid] - began) * 1000)
        return samples

    samples = asyncio.run(run())
    return {"system": "flowdeck", "backend": ns.backend, "signals": ns.signals, "ms": stats.p50_p95(samples)}


def cmd_w6(ns: argparse.Namespace) -> dict[str, Any]:
    """W6: SIGKILL a worker process holding `claims` claims → all resumed (completed) elsewhere."""
    from bench.flows import HOLD_ENV

    flowdeck_env.fresh_database(ns.backend, ns.database)
    # The victim must be able to hold every claim at once: workers × batch_size ≥ claims.
    workers = max(ns.workers, -(-ns.claims // ns.batch_size))
    # The rescuer starts beside the victim, and enters its engine only when told.
    victim = spawn_workers(ns, 1, workers, env={HOLD_ENV: "1"})[0]
    rescuer = spawn_workers(ns, 1, workers, env={HOLD_ENV: "0"}, wait_go=True)[0]
    await_ready([victim, rescuer])
    probe = Probe(ns.backend, ns.database)
    try:

        async def start() -> None:
            from bench.flows import HOLD
            from flowdeck.engine.engine import FlowEngine

            starter = FlowEngine(flowdeck_env.make_store(), (), workers=1)
            await starter.register("hold", HOLD)
            await start_many(starter, "hold", [f"w6-{i:06d}" for i in range(ns.claims)])

        asyncio.run(start())
        holding = "select count(*) from flowstore_execution where flow_id = 'hold' and executor = %s"
        executor = victim.ready["executor_id"]
        probe.wait_until("W6 claims", lambda: probe.scalar(holding, executor), ns.claims, ns.timeout)
        protocol.go(rescuer)
        time.sleep(0.5)  # the rescuer is polling and finds nothing: every claim is live
        killed = time.perf_counter()
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        resumed = probe.wait_until("W6 resumed", lambda: probe.completed("hold"), ns.claims, ns.timeout)
    finally:
        probe.close()
        if victim.poll() is None:
            victim.kill()
        stop_all([rescuer])
    return {
        "system": "flowdeck",
        "backend": ns.backend,
        "claims": ns.claims,
        "lease": ns.lease,
        "renew_every": ns.renew_every,
        "poll_timeout": ns.poll_timeout,
        "seconds": resumed - killed,
    }


def cmd_w9(ns: argparse.Namespace) -> dict[str, Any]:
    """W9: `sleepers` executions parked in an hour-long sleep → the worker process's RSS before/after."""
    flowdeck_env.fresh_database(ns.backend, ns.database)
    worker = start_workers(ns, 1, ns.workers)[0]
    probe = Probe(ns.backend, ns.database)
    try:
        time.sleep(ns.settle)
        before = rss_kb(worker.pid)

        async def start() -> None:
            from bench.flows import NAP
            from flowdeck.engine.engine import FlowEngine

            starter = FlowEngine(flowdeck_env.make_store(), (), workers=1)
            await starter.register("nap", NAP)
            await start_many(starter, "nap", [f"w9-{i:06d}" for i in range(ns.sleepers)])

        asyncio.run(start())
        parked = (
            "select count(*) from flowstore_execution e where e.flow_id = 'nap' and e.executor is null"
            " and exists (select 1 from flowstore_wait w where w.execution_id = e.id and w.kind = 'at')"
        )
        probe.wait_until("W9 parked", lambda: probe.scalar(parked), ns.sleepers, ns.timeout, every=0.2)
        time.sleep(ns.settle)
        after = rss_kb(worker.pid)
    finally:
        probe.close()
        stop_all([worker])
    return {
        "system": "flowdeck",
        "backend": ns.backend,
        "sleepers": ns.sleepers,
        "rss_before_mb": before["VmRSS"] / 1024,
        "rss_after_mb": after["VmRSS"] / 1024,
        "rss_growth_mb": (after["VmRSS"] - before["VmRSS"]) / 1024,
        "peak_mb": after["VmHWM"] / 1024,
    }


def cmd_w7(ns: argparse.Namespace) -> dict[str, Any]:
    return search_load.run(ns.rows, ns.reps)


def cmd_w13(ns: argparse.Namespace) -> dict[str, Any]:
    return purge_load.run(ns.rows, ns.reps, ns.purge_batch)


def cmd_w16(ns: argparse.Namespace) -> dict[str, Any]:
    return schedule_load.run(ns.schedules, ns.tickers)


COMMANDS = {
    "setup": cmd_setup,
    "w1": cmd_w1,
    "l3": cmd_l3,
    "w2": cmd_w2,
    "w5": cmd_w5,
    "w6": cmd_w6,
    "w7": cmd_w7,
    "w13": cmd_w13,
    "w16": cmd_w16,
    "w9": cmd_w9,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.workloads")
    parser.add_argument("command", choices=sorted(COMMANDS))
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--signals", type=int, default=20)
    parser.add_argument("--idle", type=float, default=0.3)
    parser.add_argument("--claims", type=int, default=50)
    parser.add_argument("--sleepers", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--purge-batch", type=int, default=500, help="W13: executions per purge transaction")
    parser.add_argument("--schedules", type=int, default=1000, help="W16: schedules due at once")
    parser.add_argument("--tickers", type=int, default=2, help="W16: tickers racing (each its own store)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--settle", type=float, default=1.0, help="W9: seconds before each RSS reading")
    parser.add_argument("--profile", help="W1: py-spy every worker process; collapsed stacks at PATH.<n>")
    parser.add_argument("--log-statements", action="store_true", help="W1: log every statement (analysis)")
    ns = parser.parse_args(argv)
    result = COMMANDS[ns.command](ns)
    protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)  # worker threads of the store's pool must not hold the process open


if __name__ == "__main__":
    main()
