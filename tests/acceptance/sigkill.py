"""What every SIGKILL loop shares (the atomic, pooled, schedules, concurrency limits and rate limits ones): a
database of its own on the PostgreSQL server, a copy of a migrated template, seeded in a warm `manage.py`
call; the warm parent that forks `flowdeck_workers` processes (tests/acceptance/forking_workers.py: a Django
start-up costs seconds on a loaded machine, a fork milliseconds); and the loop that SIGKILLs a serving worker
after a short random delay and replaces it.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.support import PYTHON, ROOT, environment, manage, ok
from tests.postgres_templates import create_migrated
from tests.store.django_support import POSTGRES_SERVER, require_postgres

SLOTS = 2  # workers alive at once


def query(database: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(f"{POSTGRES_SERVER}/{database}", autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _server(sql: str) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(sql)


@contextlib.contextmanager
def fresh_database(database: str) -> Iterator[str]:
    """The URL of a database for one loop, which `prepare` makes (PostgreSQL required: a missing server
    fails the test, never skips it), dropped afterwards whatever happened."""
    require_postgres()
    try:
        yield f"{POSTGRES_SERVER}/{database}"
    finally:
        _server(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def prepare(url: str, settings: str, seed: str = "") -> None:
    """The database at `url` made again as `migrate` leaves it under `settings` (a copy of the suite's
    migrated template: tests/postgres_templates.py), then `seed` run in a Django shell of `settings`."""

    def migrate(at: str) -> None:
        env = environment(at, DJANGO_SETTINGS_MODULE=settings)
        ok(manage(at, "migrate", "--verbosity", "0", env=env))

    create_migrated(url.rsplit("/", 1)[1], settings, migrate)
    if seed:
        ok(manage(url, "shell", "-c", seed, env=environment(url, DJANGO_SETTINGS_MODULE=settings)))


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past the command's name


def kill(pid: int, parent: int) -> None:
    """SIGKILL `pid` if it is still one of `parent`'s children. The kernel reaps the workers at once
    (the forker ignores SIGCHLD) and hands their pids out again: a pid alone may name anything by now."""
    if _parent_of(pid) == parent:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def alive(pid: int, parent: int) -> bool:
    return _parent_of(pid) == parent


class Forker:
    """The warm parent: `spawn()` answers a new worker's pid; `close()` kills every worker it spawned, then
    itself. `args`: the `flowdeck_workers` arguments; `extra`: more variables for the workers."""

    def __init__(self, url: str, folder: Path, settings: str, args: Sequence[str], **extra: str) -> None:
        self.folder = folder
        self.pids: list[int] = []
        argv = [PYTHON, "-m", "tests.acceptance.forking_workers", str(folder), "--", *args]
        env = environment(url, DJANGO_SETTINGS_MODULE=settings, **extra)
        self.err = (folder / "forker.err").open("w")
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True
        )

    def spawn(self) -> int:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("spawn\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            pytest.fail(f"the forker died:\n{(self.folder / 'forker.err').read_text()}")
        self.pids.append(int(line))
        return int(line)

    def serving(self, pid: int) -> bool:
        out = self.folder / f"worker-{pid}.out"
        return out.exists() and "serving" in out.read_text()

    def alive(self, pid: int) -> bool:
        return alive(pid, self.process.pid)

    def kill(self, pid: int) -> None:
        kill(pid, self.process.pid)

    def explain(self, pid: int) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.folder.glob(f"worker-{pid}.*"))
        )

    def close(self) -> None:
        for pid in self.pids:
            self.kill(pid)
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self.err.close()


@contextlib.contextmanager
def forker(url: str, folder: Path, settings: str, args: Sequence[str], **extra: str) -> Iterator[Forker]:
    made = Forker(url, folder, settings, args, **extra)
    try:
        yield made
    finally:
        made.close()


@dataclass(frozen=True)
class Kills:
    count: int
    mid_flight: int  # of a worker the database showed holding claims


def kill_loop(
    forker: Forker,
    *,
    most: int,
    within: float,
    delay: tuple[float, float],
    seed: int,
    done: Callable[[], bool] = lambda: False,
    holding: Callable[[int], bool] | None = None,
) -> Kills:
    """SIGKILL serving workers after a random `delay` each, replacing each, until `most` kills, `done()`, or
    `within` seconds. `holding(pid)`: whether that worker holds claims as it is killed (counted)."""
    rng = random.Random(seed)
    began = time.monotonic()
    kills = mid_flight = 0
    slots: dict[int, float | None] = {}  # pid -> when to kill it (None: not serving yet)
    while kills < most and not done() and time.monotonic() - began < within:
        while len(slots) < SLOTS:
            slots[forker.spawn()] = None
        now = time.monotonic()
        for pid, due in list(slots.items()):
            if due is None:
                if forker.serving(pid):
                    slots[pid] = now + rng.uniform(*delay)
                elif not forker.alive(pid):
                    pytest.fail(f"worker {pid} died on its own:\n{forker.explain(pid)}")
            elif now >= due:
                mid_flight += holding is not None and holding(pid)
                forker.kill(pid)
                kills += 1
                del slots[pid]
        time.sleep(0.01)  # the loop's polling pace, not a synchronisation: each kill is decided on state
    for pid in slots:
        forker.kill(pid)
    return Kills(kills, mid_flight)


def killed_then_finished(
    url: str,
    folder: Path,
    settings: str,
    args: Sequence[str],
    ended: Callable[[], int],
    target: int,
    *,
    most: int,
    within: float,
    seed: int,
) -> Kills:
    """The kill loop over workers of `args` (`most` kills within `within` seconds), then one last worker,
    which must bring `ended()` to `target` while it keeps making progress; answers the kills."""
    with forker(url, folder, settings, args) as workers:
        kills = kill_loop(workers, most=most, within=within, delay=(0.3, 0.8), seed=seed)
        last = workers.spawn()
        assert while_progressing(ended, target) == target, workers.explain(last)
    return kills


def holds_claims(database: str) -> Callable[[int], bool]:
    """`kill_loop`'s `holding` for a database: does the worker of this pid hold an execution's claim?"""

    def holding(pid: int) -> bool:
        [(held,)] = query(
            database, "SELECT count(*) FROM flowstore_execution WHERE executor LIKE %s", f"%-{pid}-%"
        )
        return bool(held)

    return holding


def while_progressing(count: Callable[[], int], target: int, stall: float = 60) -> int:
    """Wait for `count()` to reach `target` for as long as it keeps growing: a loaded machine is slower,
    not wrong (a fixed 90 s saw 498 of 1,000 while CI shared the machine); no growth for `stall` seconds
    is a stuck worker, and the assertion after says so. Answers the last count."""
    now, last_progress = count(), time.monotonic()
    while now < target and time.monotonic() - last_progress < stall:
        time.sleep(0.2)  # polling pace of a read-only count, not a synchronisation
        later = count()
        if later > now:
            now, last_progress = later, time.monotonic()
    return now
