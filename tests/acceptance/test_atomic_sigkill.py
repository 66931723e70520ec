"""For real: exactly-once database steps under a SIGKILL loop, on PostgreSQL.

A pair of worker processes run `atomic-ledger` executions (tests/acceptance/atomic_flows.py: ordinary
step, atomic step, atomic output, ordinary step, each writing a `Posting` row). Over and over, a worker
that is serving is SIGKILLed after a short random delay and replaced, until the kill budget is spent;
then a last worker finishes what is left. Every execution must complete with exactly one row per atomic
node, however many kills landed mid-body or mid-commit. The ordinary steps may show the in-flight re-run
(two rows for one node), and how many did is reported.

The database, the warm parent the workers are forked from and the kill loop are the ones every SIGKILL
loop shares (tests/acceptance/sigkill.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import sigkill

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXECUTIONS = 1000  # enough work that a busy machine still sees KILLS kills before it runs out
KILLS = 120
DELAY = (0.05, 0.6)  # seconds a worker serves before its kill
DATABASE = f"flowdeck_accept_atomic_{os.getpid()}"
SETTINGS = "tests.acceptance.atomic_settings"
WORKER_ARGS = ["--workers", "2", "--lease", "1", "--renew-every", "0.3", "--batch-size", "2"]
WORKER_ARGS += ["--shutdown-grace", "0", "--flows", "atomic-ledger"]
SEED = "from tests.acceptance.atomic_flows import start_many\nstart_many({})\n"


def query(sql: str, *params: Any, database: str = DATABASE) -> list[tuple[Any, ...]]:
    return sigkill.query(database, sql, *params)


def ended(database: str = DATABASE) -> int:
    rows = query(
        "SELECT count(*) FROM flowstore_execution WHERE status_kind IN ('completed', 'failed', 'cancelled')",
        database=database,
    )
    return int(rows[0][0])


def killing(
    forker: sigkill.Forker, most: int, executions: int, database: str, within: float
) -> sigkill.Kills:
    """The loop until `most` kills or every execution ended: a worker serves 0.05 to 0.6 s."""
    done = lambda: ended(database) >= executions  # noqa: E731
    holding = sigkill.holds_claims(database)
    return sigkill.kill_loop(
        forker, most=most, within=within, delay=DELAY, seed=15, done=done, holding=holding
    )


def test_atomic_steps_leave_one_row_per_node_through_a_hundred_kills(tmp_path: Path) -> None:
    with sigkill.fresh_database(DATABASE) as url:
        sigkill.prepare(url, SETTINGS, SEED.format(EXECUTIONS))
        with sigkill.forker(url, tmp_path, SETTINGS, WORKER_ARGS) as forker:
            began = time.monotonic()
            kills = killing(forker, KILLS, EXECUTIONS, DATABASE, within=150)
            took, ended_while_killing = time.monotonic() - began, ended()
            last = forker.spawn()
            sigkill.while_progressing(ended, EXECUTIONS)
            assert ended() == EXECUTIONS, forker.explain(last)
        check_history(kills, took, ended_while_killing)  # before the database goes


def check_history(kills: sigkill.Kills, took: float, ended_while_killing: int) -> None:
    statuses = query("SELECT status_kind, count(*) FROM flowstore_execution GROUP BY status_kind")
    assert statuses == [("completed", EXECUTIONS)]
    rows = query("SELECT execution_id, node, count(*) FROM fulfilment_posting GROUP BY execution_id, node")
    counts = {(eid, node): n for eid, node, n in rows}
    eids = [f"ak-{i:04d}" for i in range(EXECUTIONS)]
    atomic_doubles = {k: n for k, n in counts.items() if k[1] in ("post", "tally") and n != 1}
    assert atomic_doubles == {}
    assert all(counts.get((eid, node)) == 1 for eid in eids for node in ("post", "tally"))
    assert all(counts.get((eid, node), 0) >= 1 for eid in eids for node in ("before", "after"))
    tallies = query("SELECT count(*) FROM flowstore_field WHERE name = 'tally'")
    assert tallies == [(EXECUTIONS,)]
    reruns = sum(n - 1 for (_, node), n in counts.items() if node in ("before", "after"))
    # An atomic node started more often than once was interrupted (killed, or its claim lapsed) after
    # its start was recorded: in its body, its commit, or just before: each left no row behind.
    starts = query(
        "SELECT count(*) FROM flowstore_event WHERE kind = 'StepStarted'"
        " AND (data::jsonb)->>'step_name' IN ('post', 'tally')"
    )[0][0]
    interrupted = int(starts) - 2 * EXECUTIONS
    print(
        f"\natomic SIGKILL loop: {kills.count} kills ({kills.mid_flight} while holding claims) in "
        f"{took:.0f}s ({ended_while_killing}/{EXECUTIONS} executions ended by then); "
        "atomic rows: exactly 1 per node; "
        f"ordinary re-runs seen: {reruns}; atomic starts interrupted and re-run: {interrupted}"
    )
    assert kills.count >= 100, f"only {kills.count} kills before the work ran out: raise EXECUTIONS"
