"""The one command: `python -m bench [--quick] [--json PATH]`.

Runs every workload on this machine in one go, Flowdeck and DBOS interleaved so that a noisy machine
disturbs both alike, measures the database's own limits in the same run, prints the table and writes the
JSON (default `bench/results-<mode>.json`).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import limits, pg, protocol, tables

# Sizes per mode. `full` is the issue's; `quick` keeps the whole run under two minutes on 2 cores;
# `tiny` is for the smoke test (seconds, numbers meaningless).
SIZES: dict[str, dict[str, Any]] = {
    "full": {
        "clients": 8,
        "limit_seconds": 10,
        "w1_executions": 500,
        "w1_steps": 10,
        "w8_executions": 500,
        "w2_executions": 200,
        "w2_steps": 3,
        "w5_signals": 30,
        "w6_claims": 50,
        "w6_lease": 5.0,
        "w7_rows": 1_000_000,
        "w7_reps": 20,
        "w9_sleepers": 10_000,
        "w9_settle": 1.0,
        "w10_updates": 50,
        "w10_gap": 1.0,
        "w11_rows": 1_000_000,
        "w11_reps": 20,
        "w12_executions": 2000,  # a round of seconds: at 500, a fast machine ran W1 in about one
        "w12_clients": 100,
        "w12_rounds": 10,  # pairs: one round drifts ±15 % with the machine, the mean of 10 a third of that
        "w15_executions": 3000,  # 30 s at 100 per second
        "w15_procs": 4,
        "w15_rate": 100,
        "w17_tasks": 5000,
        "w17_procs": 2,
        "w17_rounds": 3,
        "w18_executions": 2000,  # W1 with tracing off and on, alternated (bench/traced_w1.py)
        "w18_rounds": 10,
        "w16_schedules": 1000,  # due at once, raced by w16_tickers schedulers (bench/schedule_load.py)
        "w16_tickers": 2,
        "w14_executions": 10_000,  # one running per key against unlimited W1, alternated (bench/keyed_w14.py)
        "w14_keys": 1000,
        "w14_rounds": 3,
        "w19_executions": 2000,  # W1 direct and through PgBouncer, alternated (bench/pooled_w1.py)
        "w19_rounds": 10,
    },
    "quick": {
        "clients": 8,
        "limit_seconds": 2,
        "w1_executions": 100,
        "w1_steps": 10,
        "w8_executions": 30,
        "w2_executions": 50,
        "w2_steps": 3,
        "w5_signals": 8,
        "w6_claims": 50,
        "w6_lease": 5.0,
        "w7_rows": 20_000,
        "w7_reps": 10,
        "w9_sleepers": 500,
        "w9_settle": 1.0,
        "w10_updates": 50,
        "w10_gap": 0.3,
        "w11_rows": 20_000,
        "w11_reps": 20,
        "w12_executions": 200,
        "w12_clients": 100,
        "w12_rounds": 2,
        "w15_executions": 1000,
        "w15_procs": 4,
        "w15_rate": 100,
        "w17_tasks": 1000,
        "w17_procs": 2,
        "w17_rounds": 2,
        "w18_executions": 500,
        "w18_rounds": 3,
        "w16_schedules": 1000,
        "w16_tickers": 2,
        "w14_executions": 2000,
        "w14_keys": 200,
        "w14_rounds": 1,
        "w19_executions": 500,
        "w19_rounds": 3,
    },
    "tiny": {
        "clients": 2,
        "limit_seconds": 1,
        "w1_executions": 6,
        "w1_steps": 3,
        "w8_executions": 6,
        "w2_executions": 3,
        "w2_steps": 3,
        "w5_signals": 2,
        "w6_claims": 4,
        "w6_lease": 2.0,
        "w7_rows": 300,
        "w7_reps": 2,
        "w9_sleepers": 20,
        "w9_settle": 0.2,
        "w10_updates": 3,
        "w10_gap": 0.3,
        "w11_rows": 300,
        "w11_reps": 2,
        "w12_executions": 6,
        "w12_clients": 3,
        "w12_rounds": 1,
        "w15_executions": 20,
        "w15_procs": 2,
        "w15_rate": 20,
        "w17_tasks": 10,
        "w17_procs": 1,
        "w17_rounds": 1,
        "w18_executions": 6,
        "w18_rounds": 1,
        "w16_schedules": 5,
        "w16_tickers": 2,
        "w14_executions": 6,
        "w14_keys": 2,
        "w14_rounds": 1,
        "w19_executions": 6,
        "w19_rounds": 1,
    },
}

FLOWDECK = "bench.workloads"
DBOS = "bench.peers.dbos_workloads"
LIVE_PAGE = "bench.live_page"
CONSOLE_LOAD = "bench.console_load"
LIVE_LIST = "bench.live_list"
TASKS_LOAD = "bench.tasks_load"
RATE_LOAD = "bench.rate_load"
TRACED_W1 = "bench.traced_w1"
KEYED_W14 = "bench.keyed_w14"
POOLED_W1 = "bench.pooled_w1"
W12_DEADLINE = 2400  # seconds for the whole W12 child, its daphne, workers and clients included


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def attempt(label: str, measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one measurement; a failure becomes that row's error instead of ending the run."""
    log(f"{label} …")
    began = time.perf_counter()
    try:
        result = measure()
    except Exception as exc:  # a broken workload must not hide the others' numbers
        traceback.print_exc(file=sys.stderr)
        result = {"error": f"{type(exc).__name__}: {exc}"}
    log(f"{label} done in {time.perf_counter() - began:.1f}s")
    return result


def child(module: str, *args: Any, timeout: float = 900) -> Callable[[], dict[str, Any]]:
    return lambda: protocol.run_child(module, [str(a) for a in args], timeout=timeout)


def machine() -> dict[str, Any]:
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "postgresql": pg.server_version(),
        "platform": platform.platform(),
        "dbos": package_version("dbos"),
        "django": package_version("django"),
    }


def package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def measure_limits(size: dict[str, Any]) -> dict[str, Any]:
    clients, seconds = size["clients"], size["limit_seconds"]
    found: dict[str, Any] = {}

    def as_dict(limit: limits.Limit) -> dict[str, Any]:
        return asdict(limit) | {"per_second": limit.per_second}

    limits.prepare()
    found["pgbench"] = attempt("limit: pgbench", lambda: as_dict(limits.pgbench(clients, seconds)))
    found["psycopg_loop"] = attempt(
        "limit: psycopg loop", lambda: as_dict(limits.psycopg_loop(clients, seconds))
    )
    pg.clear(pg.LIMITS_DB)  # emptied, not dropped: see pg.recreate
    # L3: W1's own statements, same executions and slots, sent by a bare loop (bench/statement_loop.py)
    l3 = ("l3", "--executions", size["w1_executions"], "--steps", size["w1_steps"], "--workers", clients)
    found["L3"] = attempt("limit: L3 (the engine's statements, no engine)", child(FLOWDECK, *l3))
    return found


# One measured run: the workloads that need it, its key in the results, its label, and how to run it.
Planned = tuple[frozenset[str], str, str, Callable[[], dict[str, Any]]]


def _w1_child(size: dict[str, Any], system: str, backend: str, procs: int) -> Callable[[], dict[str, Any]]:
    module = FLOWDECK if system == "flowdeck" else DBOS
    executions = size["w1_executions"] if backend == "postgres" else size["w8_executions"]
    args = ["w1", "--backend", backend, "--executions", executions, "--steps", size["w1_steps"]]
    return child(module, *args, "--workers", size["clients"], "--procs", procs)


def _w2_child(size: dict[str, Any], system: str, backend: str) -> Callable[[], dict[str, Any]]:
    module = FLOWDECK if system == "flowdeck" else DBOS
    args = ["w2", "--backend", backend, "--executions", size["w2_executions"], "--steps", size["w2_steps"]]
    return child(module, *args)


def plan(s: dict[str, Any]) -> list[Planned]:
    """Every run, in the order they are measured."""
    w134 = frozenset({"W1", "W3", "W4"})
    lease = s["w6_lease"]
    w6_args = ("w6", "--claims", s["w6_claims"], "--lease", lease, "--renew-every", lease / 3)
    w9_args = ("w9", "--sleepers", s["w9_sleepers"], "--poll-timeout", 1, "--settle", s["w9_settle"])
    return [
        *(
            (w134, f"W1/{system}/{procs}p", f"W1 {system} {procs}p", _w1_child(s, system, "postgres", procs))
            for procs in (1, 2)
            for system in ("flowdeck", "dbos")
        ),
        *(
            (frozenset({"W2"}), f"W2/{system}", f"W2 {system}", _w2_child(s, system, "postgres"))
            for system in ("flowdeck", "dbos")
        ),
        (
            frozenset({"W5"}),
            "W5/flowdeck",
            "W5 flowdeck",
            child(FLOWDECK, "w5", "--signals", s["w5_signals"]),
        ),
        (frozenset({"W5"}), "W5/dbos", "W5 dbos", child(DBOS, "w5", "--signals", s["w5_signals"])),
        (
            frozenset({"W6"}),
            "W6/flowdeck",
            "W6 flowdeck",
            child(FLOWDECK, *w6_args, "--poll-timeout", 1, "--batch-size", 8),
        ),
        (
            frozenset({"W7"}),
            "W7/flowdeck",
            "W7 flowdeck",
            child(FLOWDECK, "w7", "--rows", s["w7_rows"], "--reps", s["w7_reps"]),
        ),
        *(
            (
                frozenset({"W8"}),
                f"W8/w1/{system}",
                f"W8 W1 {system} sqlite",
                _w1_child(s, system, "sqlite", 1),
            )
            for system in ("flowdeck", "dbos")
        ),
        *(
            (frozenset({"W8"}), f"W8/w2/{system}", f"W8 W2 {system} sqlite", _w2_child(s, system, "sqlite"))
            for system in ("flowdeck", "dbos")
        ),
        (frozenset({"W9"}), "W9/flowdeck", "W9 flowdeck", child(FLOWDECK, *w9_args)),
        *_console_plan(s),
        _rate_run(s),
        _tasks_run(s),
        (frozenset({"W18"}), "W18/flowdeck", "W18 flowdeck", _w18_child(s)),
        (frozenset({"W14"}), "W14/flowdeck", "W14 flowdeck", _w14_child(s)),
        (frozenset({"W19"}), "W19/flowdeck", "W19 flowdeck", _w19_child(s)),
        (frozenset({"W16"}), "W16/flowdeck", "W16 flowdeck", _w16_child(s)),
    ]


def _w16_child(s: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """W16: schedules all due at once, their ticks raced by several schedulers (bench/schedule_load.py)."""
    return child(FLOWDECK, "w16", "--schedules", s["w16_schedules"], "--tickers", s["w16_tickers"])


def _rate_run(s: dict[str, Any]) -> Planned:
    """W15: a rate limit shared by worker processes (bench/rate_load.py)."""
    args = ("w15", "--executions", s["w15_executions"], "--procs", s["w15_procs"], "--rate", s["w15_rate"])
    return (frozenset({"W15"}), "W15/flowdeck", "W15 flowdeck", child(RATE_LOAD, *args, "--workers", 16))


def _tasks_run(s: dict[str, Any]) -> Planned:
    """W17: the `django.tasks` backends, Flowdeck's and django-tasks-db's, in one child."""
    args = ("w17", "--tasks", s["w17_tasks"], "--procs", s["w17_procs"], "--rounds", s["w17_rounds"])
    return (
        frozenset({"W17"}),
        "W17/flowdeck",
        "W17 tasks: flowdeck vs django-tasks-db",
        child(TASKS_LOAD, *args),
    )


def _w18_child(s: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """W1 with OpenTelemetry tracing on against off, alternated in pairs (issue 30, 3(b))."""
    args = ["w18", "--executions", s["w18_executions"], "--steps", s["w1_steps"]]
    return child(TRACED_W1, *args, "--workers", s["clients"], "--rounds", s["w18_rounds"])


def _w14_child(s: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """W14: one running per key (`Concurrency(key=..., per_key=1)`) against unlimited W1, alternated."""
    args = ["w14", "--executions", s["w14_executions"], "--keys", s["w14_keys"], "--steps", s["w1_steps"]]
    return child(KEYED_W14, *args, "--workers", s["clients"], "--rounds", s["w14_rounds"])


def _w19_child(s: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """W1 through PgBouncer in transaction mode against W1 direct, alternated in pairs (issue 32, point 1)."""
    args = ["w19", "--executions", s["w19_executions"], "--steps", s["w1_steps"]]
    return child(POOLED_W1, *args, "--workers", s["clients"], "--rounds", s["w19_rounds"])


def _console_plan(s: dict[str, Any]) -> list[Planned]:
    """The console's runs: W10 (live page), W11 (server time at scale), W12 (live list during W1)."""
    w12_args = ["w12", "--executions", s["w12_executions"], "--steps", s["w1_steps"]]
    w12_args += ["--workers", s["clients"], "--clients", s["w12_clients"], "--rounds", s["w12_rounds"]]
    return [
        (
            frozenset({"W10"}),
            "W10/flowdeck",
            "W10 flowdeck",
            child(LIVE_PAGE, "w10", "--steps", s["w10_updates"], "--gap", s["w10_gap"]),
        ),
        (
            frozenset({"W11"}),
            "W11/flowdeck",
            "W11 flowdeck",
            child(CONSOLE_LOAD, "w11", "--rows", s["w11_rows"], "--reps", s["w11_reps"]),
        ),
        (
            frozenset({"W12"}),
            "W12/flowdeck",
            "W12 flowdeck",
            child(LIVE_LIST, *w12_args, timeout=W12_DEADLINE),
        ),
    ]


def measure_workloads(size: dict[str, Any], only: set[str]) -> dict[str, Any]:
    return {
        key: attempt(label, run) for workloads, key, label, run in plan(size) if not only or workloads & only
    }


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=protocol.ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, under two minutes")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes (seconds; numbers meaningless)")
    parser.add_argument(
        "--json", type=Path, help="where to write the JSON (default bench/results-<mode>.json)"
    )
    parser.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W7 (default: all)")
    args = parser.parse_args(argv)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    size = SIZES[mode]
    only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    if not pg.reachable():
        print(f"PostgreSQL is not reachable at {pg.HOST}:{pg.PORT} as {pg.USER}", file=sys.stderr)
        return 2

    began = time.perf_counter()
    meta = {
        "mode": mode,
        "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_commit(),
        "machine": machine(),
        "load_average_at_start": [round(x, 1) for x in os.getloadavg()],
        "sizes": size,
    }
    found_limits = measure_limits(size) if not only or only & {"W4"} else {}
    runs = measure_workloads(size, only)
    meta["seconds"] = round(time.perf_counter() - began, 1)
    meta["load_average_at_end"] = [round(x, 1) for x in os.getloadavg()]
    doc = tables.document(meta, found_limits, runs)
    path = args.json or Path(__file__).resolve().parent / f"results-{mode}.json"
    tables.write_json(doc, path)
    print(tables.render(doc))
    print(
        f"\n{mode} run, {meta['seconds']} s; load average {meta['load_average_at_start'][0]} at the start,"
        f" {meta['load_average_at_end'][0]} at the end; JSON written to {path}"
    )
    return 0
