"""The peer: the same workloads written as DBOS Transact workflows and steps.

Run as `python -m bench.peers.dbos_workloads <command> [options]`; each command prints one
`BENCH_RESULT <json>` line (see `bench.protocol`). DBOS is a per-process singleton, so every measurement
gets a fresh interpreter, and W1's workers are separate OS processes on both sides:

- `setup`    create (or reset) DBOS's system database and run its migrations, once, before workers start.
- `worker`   launch DBOS with the `bench` queue (worker_concurrency = --concurrency) and serve until stdin
             closes. The `bench` queue is DBOS's way of saying "this many workers".
- `w1`       the coordinator: start --procs workers, enqueue --executions workflows of --steps trivial steps
             through a `DBOSClient`, wait for all to succeed; nodes/s and commits.
- `w2`       one process: --executions workflows of --steps steps, one after another; ms per execution.
- `w5`       one process: a workflow blocked in `DBOS.recv`; `DBOS.send` → its next step starts; ms.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import cpu, pg, protocol, stats

QUEUE = "bench"
APP_VERSION = "bench"
# DBOS's queue poller sleeps this long between dequeues (its default is 1 s). A short interval is the
# generous setting for DBOS: at 1 s a queue of 8 slots could start at most 8 workflows a second.
QUEUE_POLL_SECONDS = 0.02


def sqlite_path() -> Path:
    folder = Path(tempfile.gettempdir()) / f"flowdeck-bench{pg.SUFFIX}"
    folder.mkdir(exist_ok=True)
    return folder / "dbos.sqlite"


def _sqlite_module() -> Any:
    """The DB-API module DBOS must use for SQLite: None for the standard library's, which works up to
    Python 3.11; from 3.12 on DBOS's schema defaults are not applied through it (NOT NULL constraint
    failed at launch), and the pysqlite3 build (`pysqlite3-binary`, in the bench extra) works."""
    if sys.version_info < (3, 12):
        return None
    import pysqlite3.dbapi2  # type: ignore[import-not-found]

    return pysqlite3.dbapi2


def database_url(backend: str) -> str:
    if backend == "postgres":
        return pg.url(pg.DBOS_DB)
    return f"sqlite:///{sqlite_path()}"


# ------------------------------------------------------------------------------------------- the flows
# This module runs only as a child process, so importing dbos here never burdens `python -m bench`.

from dbos import DBOS  # noqa: E402

STAMPS: dict[str, float] = {}


@DBOS.step(name="trivial")
def trivial(i: int) -> int:
    return i


@DBOS.workflow(name="chain")
def chain(steps: int) -> int:
    total = 0
    for i in range(steps):
        total += trivial(i)
    return total


@DBOS.step(name="stamp")
def stamp(key: str) -> float:
    STAMPS[key] = time.perf_counter()
    return STAMPS[key]


@DBOS.workflow(name="listener")
def listener(key: str) -> float:
    DBOS.recv("go", timeout_seconds=60)
    return stamp(key)


def configure(executor_id: str, backend: str) -> None:
    config: dict[str, Any] = {
        "name": "flowdeck_bench",
        "system_database_url": database_url(backend),
        "application_version": APP_VERSION,
        "executor_id": executor_id,
        "log_level": "WARNING",
    }
    if backend == "postgres":
        # Room for 8 workers, the queue poller, the notification listener and the caller.
        config["sys_db_pool_size"] = 20
    elif _sqlite_module() is not None:
        config["db_engine_kwargs"] = {"module": _sqlite_module()}
    DBOS(config=config)  # type: ignore[arg-type]


def launch(executor_id: str, backend: str, concurrency: int | None) -> Any:
    configure(executor_id, backend)
    DBOS.launch()
    if concurrency:
        DBOS.register_queue(
            QUEUE,
            worker_concurrency=concurrency,
            polling_interval_sec=QUEUE_POLL_SECONDS,
            on_conflict="always_update",
        )
    return DBOS


# --------------------------------------------------------------------------------------------- commands


def reset(backend: str) -> None:
    """Nothing left from an earlier run: DBOS creates its database and schema again at launch."""
    if backend == "postgres":
        if pg.exists(pg.DBOS_DB):
            pg.empty_tables(pg.DBOS_DB, "dbos", "%", keep=("dbos_migrations",))
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(str(sqlite_path()) + suffix).unlink(missing_ok=True)


def setup(backend: str) -> dict[str, Any]:
    """A fresh system database, migrated by one process before several workers launch on it."""
    reset(backend)
    DBOS = launch("setup", backend, concurrency=8)
    DBOS.destroy()
    return {"ok": True}


def worker(backend: str, concurrency: int, executor_id: str) -> None:
    """Imported and ready, then launched on "go": the clock of W1 starts at "go" for both systems."""
    protocol.announce_ready(executor_id)
    sys.stdin.readline()
    DBOS = launch(executor_id, backend, concurrency)
    sys.stdin.read()  # until the coordinator ends us
    DBOS.destroy(workflow_completion_timeout_sec=0)


class Completion:
    """Counts finished workflows straight from DBOS's table; every poll is counted (it is a commit too)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.polls = 0
        if backend == "postgres":
            self.conn: Any = pg.connect(pg.DBOS_DB)
            self.sql = "select count(*) from dbos.workflow_status where status = 'SUCCESS'"
        else:
            self.conn = sqlite3.connect(str(sqlite_path()), timeout=30)
            self.sql = "select count(*) from workflow_status where status = 'SUCCESS'"

    def done(self) -> int:
        self.polls += 1
        row = self.conn.execute(self.sql).fetchone()
        return int(row[0])

    def close(self) -> None:
        self.conn.close()


def enqueue_all(backend: str, executions: int, steps: int) -> float:
    """Enqueue every workflow through a `DBOSClient`, 16 in flight; answers the seconds it took."""
    from dbos import DBOSClient

    if backend == "sqlite" and _sqlite_module() is not None:
        import sqlalchemy

        engine = sqlalchemy.create_engine(database_url(backend), module=_sqlite_module())
        client = DBOSClient(system_database_engine=engine)
    else:
        client = DBOSClient(system_database_url=database_url(backend))
    began = time.perf_counter()

    def enqueue(i: int) -> None:
        options = {
            "queue_name": QUEUE,
            "workflow_name": "chain",
            "workflow_id": f"w1-{i:06d}",
            "app_version": APP_VERSION,
        }
        client.enqueue(options, steps)  # type: ignore[arg-type]

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(enqueue, range(executions)))
    seconds = time.perf_counter() - began
    client.destroy()
    return seconds


def w1(backend: str, executions: int, steps: int, workers: int, procs: int) -> dict[str, Any]:
    """W1: every workflow enqueued first; the workers launch on "go"; until all succeeded."""
    postgres = backend == "postgres"
    setup(backend)
    before_start = pg.settled_xact_commit(pg.DBOS_DB) if postgres else 0
    start_seconds = enqueue_all(backend, executions, steps)
    per_process = max(1, workers // procs)
    children = [
        protocol.spawn_worker(
            "bench.peers.dbos_workloads",
            ["worker", "--backend", backend, "--concurrency", str(per_process), "--executor-id", f"w{i}"],
        )
        for i in range(procs)
    ]
    try:
        for child in children:
            protocol.wait_ready(child)
        before = pg.settled_xact_commit(pg.DBOS_DB) if postgres else 0
        completion = Completion(backend)
        pids = [child.pid for child in children]
        meter = cpu.Meter({"workers": pids})
        began = time.perf_counter()
        for child in children:
            protocol.go(child)
        while completion.done() < executions:
            time.sleep(0.02)
        elapsed = time.perf_counter() - began
        spent = meter.spent()
        cpu_seconds = spent["workers"]
        database_cpu = spent["database"] if postgres else None
        polls = completion.polls
        completion.close()
    finally:
        for child in children:
            protocol.stop_worker(child)
    nodes = executions * steps
    result: dict[str, Any] = {
        "system": "dbos",
        "backend": backend,
        "executions": executions,
        "steps": steps,
        "workers": workers,
        "processes": procs,
        "seconds": elapsed,
        "start_seconds": start_seconds,
        "nodes": nodes,
        "nodes_per_s": nodes / elapsed,
        "cpu_seconds": cpu_seconds,
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_cpu / nodes * 1e6 if database_cpu is not None else None,
        "queue_poll_seconds": QUEUE_POLL_SECONDS,
    }
    if postgres:
        commits = pg.settled_xact_commit(pg.DBOS_DB) - before
        result |= {
            "commits": commits,
            "bench_commits": polls,
            "starter_commits": before - before_start,
            "engine_commits": commits - polls,
            "commits_per_node": (commits - polls) / nodes,
        }
    return result


def w2(backend: str, executions: int, steps: int) -> dict[str, Any]:
    reset(backend)
    DBOS = launch("w2", backend, concurrency=None)
    samples = []
    for _ in range(executions):
        began = time.perf_counter()
        DBOS.start_workflow(chain, steps).get_result()
        samples.append((time.perf_counter() - began) * 1000)
    DBOS.destroy()
    return {"system": "dbos", "backend": backend, "executions": executions, "steps": steps} | {
        "ms": stats.p50_p95(samples)
    }


def w5(backend: str, signals: int, idle: float) -> dict[str, Any]:
    reset(backend)
    DBOS = launch("w5", backend, concurrency=None)
    samples = []
    for i in range(signals):
        key = f"w5-{i}"
        handle = DBOS.start_workflow(listener, key)
        time.sleep(idle)  # let it reach recv and go idle
        began = time.perf_counter()
        DBOS.send(handle.get_workflow_id(), 1, "go")
        handle.get_result()
        samples.append((STAMPS[key] - began) * 1000)
    DBOS.destroy()
    return {"system": "dbos", "backend": backend, "signals": signals, "ms": stats.p50_p95(samples)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.peers.dbos_workloads")
    parser.add_argument("command", choices=["setup", "worker", "w1", "w2", "w5"])
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--executor-id", default="w0")
    parser.add_argument("--signals", type=int, default=20)
    parser.add_argument("--idle", type=float, default=0.3)
    args = parser.parse_args(argv)
    os.environ.setdefault("DBOS__DISABLE_TELEMETRY", "1")
    if args.command == "worker":
        worker(args.backend, args.concurrency, args.executor_id)
        return
    if args.command == "setup":
        result = setup(args.backend)
    elif args.command == "w1":
        result = w1(args.backend, args.executions, args.steps, args.workers, args.procs)
    elif args.command == "w2":
        result = w2(args.backend, args.executions, args.steps)
    else:
        result = w5(args.backend, args.signals, args.idle)
    protocol.emit(result)
    # DBOS leaves non-daemon threads behind on some paths; the result is out, so leave now.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
