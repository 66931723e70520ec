"""For real: one execution per tick under a SIGKILL loop, on PostgreSQL.

Two `flowdeck_workers` processes (each running the schedules' ticker beside its workers) serve a schedule
that ticks every second. Over and over, one of them is SIGKILLed after a short random delay and replaced;
then the last one catches up. Every tick from the first to the last must be recorded exactly once and
have exactly one execution, and no execution may exist without its tick: no tick started twice, none lost,
however many kills landed mid-round.

The database, the warm parent the workers are forked from and the kill loop are the ones every SIGKILL
loop shares (tests/acceptance/sigkill.py).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import sigkill

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

KILLS = 25
DELAY = (0.2, 1.5)  # seconds a worker serves before its kill
DATABASE = f"flowdeck_accept_schedules_{os.getpid()}"
SETTINGS = "tests.acceptance.schedule_settings"
WORKER_ARGS = ["--workers", "1", "--lease", "1", "--renew-every", "0.3", "--shutdown-grace", "0"]


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return sigkill.query(DATABASE, sql, *params)


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
    with sigkill.fresh_database(DATABASE) as url:
        sigkill.prepare(url, SETTINGS)
        with sigkill.forker(url, tmp_path, SETTINGS, WORKER_ARGS) as forker:
            kills = sigkill.kill_loop(forker, most=KILLS, within=120, delay=DELAY, seed=16)
            [(end,)] = query("SELECT now()")
            last = forker.spawn()
            caught_up_to(end)
            ticks = query("SELECT tick, outcome, execution_id FROM flowstore_schedule_tick ORDER BY tick")
            assert ticks, forker.explain(last)
            first, newest = ticks[0][0], ticks[-1][0]
            assert newest >= end, forker.explain(last)
            executions = {
                eid for (eid,) in query("SELECT id FROM flowstore_execution WHERE flow_id = 'every-second'")
            }
        seconds = int((newest - first).total_seconds()) + 1
        assert [t for t, _, _ in ticks] == [first + timedelta(seconds=n) for n in range(seconds)]  # none lost
        assert {outcome for _, outcome, _ in ticks} == {"started"}
        assert executions == {eid for _, _, eid in ticks}  # one each, none without its tick
        assert kills.count >= KILLS // 2, f"only {kills.count} kills landed"
        print(f"\nschedules SIGKILL loop: {kills.count} kills, {len(ticks)} ticks, each started once")
