"""The database's own limits at a given client count: what Flowdeck's nodes/s is compared against (W4).

Two ceilings, both one-row INSERT commits on the same server:

- `pgbench`: C clients, a one-row INSERT script, no vacuum; the server's ceiling with no Python at all.
- a plain psycopg loop: C threads in one Python process, each with its own connection, one INSERT per
  transaction; the ceiling for anything written in Python that commits once per unit of work.
"""

from __future__ import annotations

import glob
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from bench import pg

INSERT = "insert into bench_insert (v) values (1)"


@dataclass(frozen=True)
class Limit:
    name: str
    clients: int
    seconds: float
    commits: int

    @property
    def per_second(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0


def prepare() -> None:
    pg.recreate(pg.LIMITS_DB)
    with pg.connect(pg.LIMITS_DB) as conn:
        conn.execute(
            "create table bench_insert (id bigserial primary key, v int not null,"
            " at timestamptz not null default now())"
        )


def pgbench_path() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))
    if not found:
        raise FileNotFoundError("pgbench not found under /usr/lib/postgresql/*/bin")
    return found[-1]


def pgbench(clients: int, seconds: float) -> Limit:
    """pgbench's TPS (excluding connection time) for a one-row INSERT script."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(INSERT + ";\n")
    command = [
        pgbench_path(),
        "-n",
        "-h", pg.HOST,
        "-p", str(pg.PORT),
        "-U", pg.USER,
        "-c", str(clients),
        "-j", str(min(clients, 2)),
        "-T", str(max(1, round(seconds))),
        "-f", script.name,
        pg.LIMITS_DB,
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    processed = re.search(r"number of transactions actually processed: (\d+)", out)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    if not (processed and tps):
        raise RuntimeError(f"could not read pgbench's output:\n{out}")
    commits = int(processed.group(1))
    return Limit("pgbench", clients, commits / float(tps.group(1)), commits)


def psycopg_loop(clients: int, seconds: float) -> Limit:
    """C threads, one connection each, one INSERT per transaction, for `seconds`."""
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def client(index: int) -> None:
        with pg.connect(pg.LIMITS_DB) as conn:
            conn.autocommit = False
            start.wait()
            while not stop.is_set():
                with conn.transaction():
                    conn.execute(INSERT)
                counts[index] += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return Limit("psycopg loop", clients, time.perf_counter() - began, sum(counts))
