"""W12: websocket clients watching the executions list while W1 runs
(`python -m bench.live_list w12 --executions 500 --steps 10 --workers 8 --clients 100 --rounds 3`).

W1 as the main bench runs it (the `chainN` flow, every execution created first, one `bench.worker`
process with `workers` workers told to go at once, timed from "go" to the last completion) on a PostgreSQL
database of its own (`flowdeck_bench_w12`, migrated with the whole console), in rounds alternating
without and with clients: without, with, without, with, … so that a noisy machine shows in both. Each
round records the CPU each party used while W1 ran (the workers, daphne, the clients, the database
server): a round where every party got less than usual is the machine stalling, not the console.

A round with clients also runs daphne serving the console (a fresh one each round: its one live feed
starts with the first page) and `bench.live_clients`, one process holding `clients` websocket
connections opened as the list opens its own (`/ws/live/?after=N`, no filter: every event), logged in
with a session cookie, at the lowest priority (they stand in for browsers on other machines: they take
only what the machine leaves idle, and a late client makes its latency longer, never shorter). They
connect after the executions are created and before the workers go; then
every event of the W1 run is pushed to every client. Once the workers are done the clients are given
`--drain-timeout` seconds to hear the rest, and report each event's commit → receive latency (the commit
time is the event's timestamp, stamped by the worker just before the write that commits it; the receive
time is the client's wall clock, the same machine's) and which events any client missed.

A round without clients runs no daphne at all (an idle console with no page open reads nothing).

Every child has a deadline: the worker must be ready in 120 s, W1 must finish in `--timeout`, daphne
must listen within 60 s, the clients must connect in 120 s and report within the drain timeout (plus a
margin); a child past its deadline is killed and the round fails with the reason. `python -m bench`
also runs this whole process in a process group it kills past its own deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import mean
from typing import Any

from bench import cpu, flowdeck_env, live_page, pg, protocol, stats, workloads
from bench.worker import add_engine_arguments

DATABASE = f"flowdeck_bench_w12{pg.SUFFIX}"
CLIENTS_NICE = 19
SETTLE_SECONDS = 0.5  # after the clients connected: the feed's watcher has read its starting point
CONNECT_SECONDS = 120.0


def _web_env() -> dict[str, str]:
    """The console's processes' environment. The key is W12's own, for the seed and daphne alike: this
    process's environment carries the bench settings' key once Django started here."""
    return protocol.child_env() | {
        "FLOWDECK_SECRET_KEY": "flowdeck-bench-key-w12-serves-only-a-throwaway-database",
        "DATABASE_URL": pg.url(DATABASE),
        "DJANGO_SETTINGS_MODULE": "bench.web_settings",
        "FLOWDECK_LOG_LEVEL": "WARNING",
    }


def cmd_seed(ns: argparse.Namespace) -> dict[str, Any]:
    """A user with a logged-in session in the W12 database (run with the console's settings)."""
    import django

    django.setup()
    return {"session": live_page.login_session()}


def _prepare() -> str:
    """The W12 database, migrated with the whole console, and a session; answers the session key."""
    pg.recreate(DATABASE)
    env = _web_env()
    migrate = [sys.executable, "manage.py", "migrate", "-v", "0"]
    subprocess.run(migrate, cwd=protocol.ROOT, env=env, check=True, timeout=300)
    seed = [sys.executable, "-m", "bench.live_list", "seed"]
    seeded = subprocess.run(
        seed, cwd=protocol.ROOT, env=env, check=True, capture_output=True, text=True, timeout=120
    )
    last = seeded.stdout.strip().splitlines()[-1]
    return str(json.loads(last.removeprefix(protocol.MARK))["session"])


class Lines:
    """A child's stdout read on a thread, so that every wait for a line has a deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="bench-w12-lines", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout: float, what: str) -> str:
        """The rest of the first line starting with `prefix`; the child is killed past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.proc.kill()
                raise TimeoutError(f"{what}: nothing after {timeout:g} s, killed") from None
            if line is None:
                raise RuntimeError(f"{what}: exited {self.proc.wait()} first")
            if line.startswith(prefix):
                return line[len(prefix) :].strip()


def _clients_deadline(ns: argparse.Namespace) -> float:
    """The clients' own deadline: connecting, the W1 run, the drain, and a margin."""
    return CONNECT_SECONDS + ns.timeout + ns.drain_timeout + 60


def _clients(ns: argparse.Namespace, port: int, session: str, after: int) -> tuple[Any, Lines]:
    args = ["--port", port, "--session", session, "--database", DATABASE, "--count", ns.clients]
    args += ["--after", after, "--drain-timeout", ns.drain_timeout, "--timeout", _clients_deadline(ns)]
    proc = subprocess.Popen(
        ["nice", "-n", str(CLIENTS_NICE), sys.executable, "-m", "bench.live_clients", *map(str, args)],
        cwd=protocol.ROOT,
        env=protocol.child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, Lines(proc)


def _latest_event_id() -> int:
    with pg.connect(DATABASE) as conn:
        row = conn.execute("select coalesce(max(id), 0) from flowstore_event").fetchone()
    return int(row[0]) if row else 0


def _w1(
    ns: argparse.Namespace, workers: list[Any], workflow_id: str, others: dict[str, int]
) -> tuple[float, dict[str, float]]:
    """Tell the workers to go; answers the seconds until every execution completed, and the CPU
    seconds each party spent meanwhile (the workers, the database server, and `others` by name)."""
    probe = workloads.Probe("postgres", DATABASE)
    parties = {"workers": [child.pid for child in workers]} | {name: [pid] for name, pid in others.items()}
    try:
        meter = cpu.Meter(parties)
        began = time.perf_counter()
        for child in workers:
            protocol.go(child)
        completed = lambda: probe.completed(workflow_id)  # noqa: E731
        ended = probe.wait_until("W1", completed, ns.executions, timeout=ns.timeout, every=0.02)
        return ended - began, meter.spent()
    finally:
        probe.close()


def _round(ns: argparse.Namespace, session: str | None, work: Path, number: int) -> dict[str, Any]:
    """One W1 run; with clients when a session is given."""
    workflow_id = f"chain{ns.steps}"
    pg.empty_tables(DATABASE, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    log = work / f"daphne-{number}.log"
    workers = workloads.spawn_workers(ns, 1, ns.workers, wait_go=True)
    server = listeners = None
    port, connect_s = live_page.free_port(), None
    try:
        if session is not None:  # daphne imports the console while the workers import theirs
            server = live_page.daphne(_web_env(), log, port)
        workloads.await_ready(workers)
        asyncio.run(workloads.start_chains(workflow_id, ns.steps, ns.executions))
        after = _latest_event_id()
        if server is not None and session is not None:
            live_page.wait_up(port, server, log)
            listeners = _clients(ns, port, session, after)
            ready = listeners[1].wait_for(protocol.READY, CONNECT_SECONDS, "W12 clients")
            connect_s = json.loads(ready)["connect_s"]
            time.sleep(SETTLE_SECONDS)
        others: dict[str, int] = {}
        if server is not None and listeners is not None:
            others = {"web": server.pid, "clients": listeners[0].pid}
        seconds, spent = _w1(ns, workers, workflow_id, others)
        workloads.stop_all(workers)
        found: dict[str, Any] = {"clients": ns.clients if listeners else 0, "seconds": seconds}
        found["nodes_per_s"] = ns.executions * ns.steps / seconds
        found["cpu_cores"] = {name: round(used / seconds, 3) for name, used in spent.items()}
        if listeners is not None:
            proc, lines = listeners
            assert proc.stdin is not None
            proc.stdin.write("drain\n")
            proc.stdin.flush()
            report = lines.wait_for(protocol.MARK, ns.drain_timeout + 120, "W12 clients' report")
            found |= {"connect_s": connect_s, "delivery": json.loads(report)}
        return found
    finally:
        workloads.stop_all(workers)
        if listeners is not None:
            protocol.stop_worker(listeners[0])
        if server is not None:
            live_page.stop(server)


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Both arms' nodes/s, their ratio, and the delivery over every round with clients."""
    without = [r["nodes_per_s"] for r in rounds if not r["clients"]]
    with_clients = [r for r in rounds if r["clients"]]
    histogram: dict[int, int] = {}
    for r in with_clients:
        for ms, n in r["delivery"].pop("latency_histogram_ms").items():
            histogram[int(ms)] = histogram.get(int(ms), 0) + n
    rate_with = mean(r["nodes_per_s"] for r in with_clients)
    rate_without = mean(without)
    deliveries = [r["delivery"] for r in with_clients]
    return {
        "nodes_per_s_without": rate_without,
        "nodes_per_s_with": rate_with,
        "ratio": rate_with / rate_without,
        "ms": stats.from_histogram(histogram),
        "max_ms": max((d["max_ms"] for d in deliveries if d["max_ms"] is not None), default=None),
        "committed": sum(d["committed"] for d in deliveries),
        "missed": sum(d["missed"] for d in deliveries),
        "duplicates": sum(d["duplicates"] for d in deliveries),
        "clients_missing_events": max(d["clients_missing_events"] for d in deliveries),
        "all_received": all(d["missed"] == 0 for d in deliveries),
    }


def cmd_w12(ns: argparse.Namespace) -> dict[str, Any]:
    session = _prepare()
    flowdeck_env.start_django("postgres", DATABASE)  # the coordinator creates the executions
    work = Path(tempfile.mkdtemp(prefix="flowdeck-w12-"))
    rounds = []
    try:
        for n in range(ns.rounds * 2):
            with_clients = n % 2 == 1
            rounds.append(_round(ns, session if with_clients else None, work, n))
            print(f"W12 round {n + 1}: {json_brief(rounds[-1])}", file=sys.stderr, flush=True)
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
        "clients": ns.clients,
        "client_filter": "none (every event), as the executions list",
        "rounds": rounds,
    } | _summary(rounds)


def json_brief(found: dict[str, Any]) -> str:
    delivery = found.get("delivery")
    text = f"{found['clients']} clients, {found['nodes_per_s']:,.0f} nodes/s"
    text += ", cores " + " ".join(f"{name} {used:.2f}" for name, used in found["cpu_cores"].items())
    if delivery:
        text += f", p95 {delivery['ms']['p95']:g} ms, {delivery['missed']} missed"
    return text


COMMANDS = {"seed": cmd_seed, "w12": cmd_w12}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.live_list")
    parser.add_argument("command", choices=sorted(COMMANDS))
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of rounds: without, then with")
    parser.add_argument("--drain-timeout", type=float, default=300.0, help="for the clients after W1")
    parser.add_argument("--timeout", type=float, default=300.0, help="for each W1 run")
    ns = parser.parse_args(argv)
    ns.database = DATABASE
    # SIGTERM ends the run through its `finally` blocks, which stop every child
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = COMMANDS[ns.command](ns)
    protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
