"""W17: tasks per second through Flowdeck's `django.tasks` backend and its workers, against
`django-tasks-db`'s backend and its own worker (`manage.py db_worker`), on one PostgreSQL server in one run:
`python -m bench.tasks_load w17 --tasks N --procs P --rounds R`.

Each system, each round, on a fresh database of its own (`flowdeck_bench_tasks`, `flowdeck_bench_tasks_db`),
with the project's settings and `TASKS` naming its backend (`bench/tasks_settings.py`):

1. migrate; N tasks (`bench.tasks_funcs.noop`, trivial) enqueued from one process, one `enqueue` per task
   outside any transaction, as N views would (each its own commit); the enqueue rate is reported too;
2. P worker processes started: `manage.py flowdeck_workers --workers 8` (the engine's other knobs at their
   defaults) or `manage.py db_worker --interval 0.02` (django-tasks-db runs one task at a time per process;
   its idle poll lowered from 1 s, as W1 lowers DBOS's);
3. the run timed from the first task's start to the last task's end, read from each backend's own rows
   (Flowdeck: the first `ExecutionClaimed` event and the last execution's update; django-tasks-db: the
   first `started_at` and the last `finished_at`), so neither side's process start-up is counted; every
   task must have ended successfully.

Rounds alternate the systems (a noisy machine disturbs both); each side's figure is the best round's.
The ratio is Flowdeck's tasks/s ÷ django-tasks-db's (issue 30's target: ≥ 3×).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from bench import pg, protocol

DATABASES = {"flowdeck": f"flowdeck_bench_tasks{pg.SUFFIX}", "db": f"flowdeck_bench_tasks_db{pg.SUFFIX}"}
TASK = "bench.tasks_funcs.noop"
WORKERS = {
    "flowdeck": ["flowdeck_workers", "--workers", "8"],
    "db": ["db_worker", "--interval", "0.02"],
}
ENQUEUE = """
import json, time
from bench.tasks_funcs import noop
began = time.perf_counter()
for index in range({tasks}):
    noop.enqueue(index)
print("ENQUEUED " + json.dumps(time.perf_counter() - began))
"""
# (finished successfully, failed, first start, last end) per system, from its own rows
PROGRESS = {
    "flowdeck": (
        "SELECT count(*) FILTER (WHERE status_kind = 'completed'),"
        " count(*) FILTER (WHERE status_kind IN ('failed', 'cancelled') OR stop_code <> ''),"
        " (SELECT min(timestamp) FROM flowstore_event WHERE kind = 'ExecutionClaimed'),"
        " max(updated) FROM flowstore_execution WHERE flow_id = %s"
    ),
    "db": (
        "SELECT count(*) FILTER (WHERE status = 'SUCCESSFUL'), count(*) FILTER (WHERE status = 'FAILED'),"
        " min(started_at), max(finished_at) FROM django_tasks_database_dbtaskresult WHERE task_path = %s"
    ),
}
DEADLINE = 600.0  # seconds for one side's run to end every task


def log(message: str) -> None:
    print(f"[w17 {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _env(system: str) -> dict[str, str]:
    env = protocol.child_env()
    env.update(
        DJANGO_SETTINGS_MODULE="bench.tasks_settings",
        DATABASE_URL=pg.url(DATABASES[system]),
        FLOWDECK_BENCH_TASKS=system,
        FLOWDECK_LOG_LEVEL="WARNING",
    )
    return env


def _django(system: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=protocol.ROOT,
        env=_env(system),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{system}: django {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def _progress(system: str) -> tuple[int, int, Any, Any]:
    with pg.connect(DATABASES[system]) as conn:
        row = conn.execute(PROGRESS[system], (TASK,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), row[2], row[3]


def one_round(system: str, tasks: int, procs: int) -> dict[str, Any]:
    """One side's round: fresh database, enqueue, run on `procs` worker processes; its figures."""
    pg.recreate(DATABASES[system])
    _django(system, "migrate", "--verbosity", "0")
    out = _django(system, "shell", "-c", ENQUEUE.format(tasks=tasks))
    enqueue_s = json.loads(next(line for line in out.splitlines() if line.startswith("ENQUEUED "))[9:])
    with tempfile.TemporaryDirectory(prefix="w17-") as folder:
        logs = [(Path(folder) / f"worker-{n}.err").open("w+") for n in range(procs)]
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "django", *WORKERS[system]],
                cwd=protocol.ROOT,
                env=_env(system),
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
                start_new_session=True,
            )
            for err in logs
        ]
        try:
            done, failed, first, last = _wait(system, tasks, workers, logs)
        finally:
            for worker in workers:
                protocol.kill_group(worker)
            for err in logs:
                err.close()
    if failed or done != tasks:
        raise RuntimeError(f"{system}: {done} of {tasks} tasks succeeded, {failed} failed")
    seconds = (last - first).total_seconds()
    return {
        "tasks": tasks,
        "procs": procs,
        "run_s": seconds,
        "tasks_per_s": tasks / seconds,
        "enqueue_s": enqueue_s,
        "enqueued_per_s": tasks / enqueue_s,
    }


def _wait(
    system: str, tasks: int, workers: list[subprocess.Popen[str]], logs: list[IO[str]]
) -> tuple[int, int, Any, Any]:
    """Until every task ended (or one failed, or a worker died, or the deadline): the last progress."""
    deadline = time.monotonic() + DEADLINE
    while True:
        done, failed, first, last = _progress(system)
        if done + failed >= tasks or failed:
            return done, failed, first, last
        dead = [n for n, w in enumerate(workers) if w.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = (
                f"worker {dead[0]} exited ({workers[dead[0]].returncode})" if dead else f"over {DEADLINE:g} s"
            )
            detail = Path(logs[dead[0]].name).read_text()[-3000:] if dead else ""
            raise RuntimeError(f"{system}: {why} at {done} of {tasks} tasks\n{detail}")
        time.sleep(0.1)


def w17(tasks: int, procs: int, rounds: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"flowdeck": [], "db": []}
    for index in range(rounds):
        for system in ("flowdeck", "db") if index % 2 == 0 else ("db", "flowdeck"):
            log(f"round {index + 1}/{rounds}: {system}, {tasks} tasks on {procs} worker processes")
            runs[system].append(one_round(system, tasks, procs))
            log(f"  {runs[system][-1]['tasks_per_s']:.0f} tasks/s")
    best = {system: max(found, key=lambda r: r["tasks_per_s"]) for system, found in runs.items()}
    return {
        "flowdeck": {**best["flowdeck"], "rounds": runs["flowdeck"]},
        "db": {**best["db"], "rounds": runs["db"]},
        "ratio": best["flowdeck"]["tasks_per_s"] / best["db"]["tasks_per_s"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tasks_load")
    parser.add_argument("workload", choices=["w17"])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    protocol.emit(w17(args.tasks, args.procs, args.rounds))


if __name__ == "__main__":
    main()
