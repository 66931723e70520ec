"""For real: one execution per tick under a SIGKILL loop, on PostgreSQL.

Two `flowdeck_workers` processes (each running the schedules' ticker beside its workers) serve a schedule
that ticks every second. Over and over, one of them is SIGKILLed after a short random delay and replaced;
then the last one catches up. Every tick from the first to the last must be recorded exactly once and
have exactly one execution, and no execution may exist without its tick: no tick started twice, none lost,
however many kills landed mid-round.

The workers are forked from one warm parent (tests/acceptance/forking_workers.py).
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.support import PYTHON, ROOT, environment, manage, ok
from tests.acceptance.test_atomic_sigkill import alive, kill
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

KILLS = 25
SLOTS = 2
DELAY = (0.2, 1.5)  # seconds a worker serves before its kill
DATABASE = f"flowdeck_accept_schedules_{os.getpid()}"
SETTINGS = "tests.acceptance.schedule_settings"
WORKER_ARGS = ["--workers", "1", "--lease", "1", "--renew-every", "0.3", "--shutdown-grace", "0"]


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(f"{POSTGRES_SERVER}/{DATABASE}", autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


class Forker:
    def __init__(self, url: str, folder: Path, settings: str = SETTINGS, args: tuple[str, ...] = ()) -> None:
        self.folder = folder
        argv = [PYTHON, "-m", "tests.acceptance.forking_workers", str(folder), "--", *(args or WORKER_ARGS)]
        self.err = (folder / "forker.err").open("w")
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=environment(url, DJANGO_SETTINGS_MODULE=settings),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
        )

    def spawn(self) -> int:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("spawn\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            pytest.fail(f"the forker died:\n{(self.folder / 'forker.err').read_text()}")
        return int(line)

    def serving(self, pid: int) -> bool:
        out = self.folder / f"worker-{pid}.out"
        return out.exists() and "serving" in out.read_text()

    def explain(self, pid: int) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.folder.glob(f"worker-{pid}.*"))
        )

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self.err.close()


def kill_loop(
    forker: Forker, most: int = KILLS, within: float = 120, delay: tuple[float, float] = DELAY
) -> int:
    """SIGKILL serving workers after a short random delay, replacing each, until `most` kills or `within`
    seconds."""
    rng = random.Random(16)
    began = time.monotonic()
    kills = 0
    slots: dict[int, float | None] = {}
    while kills < most and time.monotonic() - began < within:
        while len(slots) < SLOTS:
            slots[forker.spawn()] = None
        now = time.monotonic()
        for pid, due in list(slots.items()):
            if due is None:
                if forker.serving(pid):
                    slots[pid] = now + rng.uniform(*delay)
                elif not alive(pid, forker.process.pid):
                    pytest.fail(f"worker {pid} died on its own:\n{forker.explain(pid)}")
            elif now >= due:
                kill(pid, forker.process.pid)
                kills += 1
                del slots[pid]
        time.sleep(0.01)
    for pid in slots:
        kill(pid, forker.process.pid)
    return kills


def caught_up_to(end: Any, stall: float = 60) -> None:
    """Wait while the last worker records ticks, until one at or after `end` is recorded (a worker that
    records none for `stall` seconds is stuck: the assertions after say so)."""
    count, last_progress = -1, time.monotonic()
    while time.monotonic() - last_progress < stall:
        newest, recorded = query("SELECT max(tick), count(*) FROM flowstore_schedule_tick")[0]
        if newest is not None and newest >= end:
            return
        if recorded > count:
            count, last_progress = recorded, time.monotonic()
        time.sleep(0.2)


def test_every_tick_starts_once_through_kills(tmp_path: Path) -> None:
    require_postgres()
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    url = f"{POSTGRES_SERVER}/{DATABASE}"
    forker: Forker | None = None
    try:
        ok(manage(url, "migrate", "--verbosity", "0", env=environment(url, DJANGO_SETTINGS_MODULE=SETTINGS)))
        forker = Forker(url, tmp_path)
        kills = kill_loop(forker)
        [(end,)] = query("SELECT now()")
        last = forker.spawn()
        caught_up_to(end)
        ticks = query("SELECT tick, outcome, execution_id FROM flowstore_schedule_tick ORDER BY tick")
        assert ticks, forker.explain(last)
        first, newest = ticks[0][0], ticks[-1][0]
        assert newest >= end, forker.explain(last)
        seconds = int((newest - first).total_seconds()) + 1
        assert [t for t, _, _ in ticks] == [first + timedelta(seconds=n) for n in range(seconds)]  # none lost
        assert {outcome for _, outcome, _ in ticks} == {"started"}
        executions = {
            eid for (eid,) in query("SELECT id FROM flowstore_execution WHERE flow_id = 'every-second'")
        }
        assert executions == {eid for _, _, eid in ticks}  # one each, none without its tick
        assert kills >= KILLS // 2, f"only {kills} kills landed"
        print(f"\nschedules SIGKILL loop: {kills} kills, {len(ticks)} ticks, each started once")
    finally:
        if forker is not None:
            forker.close()
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
