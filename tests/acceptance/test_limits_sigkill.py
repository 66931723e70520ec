"""For real: a concurrency limit of one per key under a SIGKILL loop, on PostgreSQL.

Thirty executions over three customers (one running per customer) are started, then two
`flowdeck_workers` processes of four attempt slots each serve them while, over and over, one is SIGKILLed
and replaced; a last worker finishes the rest. Then the history is read: every body that completed ran
from its StepStarted to its StepCompleted (the same executor's), and no two of those intervals of one
customer overlap, however many kills landed mid-body (a killed body's slot comes back as its lease lapses,
and its late writes, if any, are refused). Small enough for CI (about 30 s, a third of it the migration).
"""

from __future__ import annotations

import itertools
import json
import os
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import sigkill

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXECUTIONS, CUSTOMERS = 30, 3
DATABASE = f"flowdeck_accept_limits_{os.getpid()}"
SETTINGS = "tests.acceptance.limit_settings"
ARGS = ("--workers", "4", "--lease", "1", "--renew-every", "0.3", "--shutdown-grace", "0")
SEED = (
    "from flowdeck import client\n"
    f"for n in range({EXECUTIONS}):\n"
    "    client.start('per-customer', execution_id=f'e{n:02}', customer=f'c{n % " + str(CUSTOMERS) + "}')\n"
)


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return sigkill.query(DATABASE, sql, *params)


def completed() -> int:
    return int(query("SELECT count(*) FROM flowstore_execution WHERE status_kind = 'completed'")[0][0])


def bodies() -> dict[str, list[tuple[datetime, datetime]]]:
    """Per customer, each completed body's interval: a StepStarted and the StepCompleted that followed it
    in the same execution from the same executor (a killed attempt's start has none)."""
    found: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    rows = query(
        "SELECT e.concurrency_key, v.execution_id, v.kind, v.timestamp, v.data FROM flowstore_event v"
        " JOIN flowstore_execution e ON e.id = v.execution_id"
        " WHERE v.kind IN ('StepStarted', 'StepCompleted') ORDER BY v.execution_id, v.seq"
    )
    open_at: dict[str, tuple[str, datetime]] = {}
    for key, eid, kind, at, data in rows:
        if kind == "StepStarted":
            open_at[eid] = (json.loads(data).get("executor_id", ""), at)
        elif eid in open_at:
            found[key].append((open_at.pop(eid)[1], at))
    return found


def overlapping(intervals: list[tuple[datetime, datetime]]) -> list[tuple[Any, Any]]:
    ordered = sorted(intervals)
    return [(a, b) for a, b in itertools.pairwise(ordered) if b[0] < a[1]]


def test_one_per_key_holds_through_kills(tmp_path: Path) -> None:
    with sigkill.fresh_database(DATABASE) as url:
        sigkill.prepare(url, SETTINGS, SEED)
        kills = sigkill.killed_then_finished(
            url, tmp_path, SETTINGS, ARGS, completed, EXECUTIONS, most=6, within=10, seed=16
        )
        found = bodies()
        assert sum(len(v) for v in found.values()) >= EXECUTIONS
        for key, intervals in sorted(found.items()):
            assert overlapping(intervals) == [], f"two of {key} ran at once"
        assert kills.count >= 3, f"only {kills.count} kills landed"
        print(
            f"\nlimits SIGKILL loop: {kills.count} kills, {EXECUTIONS} executions, "
            "never two of a customer at once"
        )
