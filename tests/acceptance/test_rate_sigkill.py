"""For real: a rate limit shared by every worker under a SIGKILL loop, on PostgreSQL.

Forty executions each call the carrier once under `carrier: 5 per second` (tests/acceptance/rate_flows.py),
served by two `flowdeck_workers` processes of four attempt slots each: far more work than the limit lets
through at once, so most calls wait durably for a reserved token. Over and over, a worker is SIGKILLed and
replaced (a kill mid-call leaves a started node that the next attempt runs again), then a last worker
finishes the rest. Then the history is read:

- tokens are never over-spent: every start of the limited node names the token it runs on (its StepStarted
  event's `token`); no token carries two starts, none is used before it is due, and no window of one second
  holds more than five of them;
- nothing is lost and nothing completed twice: every execution completed, each node completed once;
- no recorded node is run again: no StepStarted of a node after its StepCompleted.

15 to 30 s here (the migration included); the database, forker and kill loop are tests/acceptance/sigkill.py.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance import sigkill

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXECUTIONS = 40
PER_SECOND = 5  # tests/acceptance/rate_flows.py's RATE_LIMITS
DATABASE = f"flowdeck_accept_rates_{os.getpid()}"
SETTINGS = "tests.acceptance.rate_settings"
ARGS = ("--workers", "4", "--lease", "1", "--renew-every", "0.3", "--shutdown-grace", "0")
SEED = (
    "from flowdeck import client\n"
    f"for n in range({EXECUTIONS}):\n"
    "    client.start('carrier-calls', execution_id=f'r{n:02}', order=f'o{n:02}')\n"
)


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return sigkill.query(DATABASE, sql, *params)


def completed() -> int:
    return int(query("SELECT count(*) FROM flowstore_execution WHERE status_kind = 'completed'")[0][0])


def history() -> list[tuple[str, str, datetime, dict[str, Any]]]:
    """Every event of every execution, in each execution's order: (execution, kind, timestamp, data)."""
    rows = query("SELECT execution_id, kind, timestamp, data FROM flowstore_event ORDER BY execution_id, seq")
    return [(eid, kind, at, json.loads(data)) for eid, kind, at, data in rows]


def test_rate_limit_tokens_hold_through_kills(tmp_path: Path) -> None:
    with sigkill.fresh_database(DATABASE) as url:
        sigkill.prepare(url, SETTINGS, SEED)
        kills = sigkill.killed_then_finished(
            url, tmp_path, SETTINGS, ARGS, completed, EXECUTIONS, most=10, within=15, seed=17
        )
        events = history()
    calls = check_tokens(events)
    check_nodes(events)
    waited = sum(kind == "RateLimited" for _, kind, _, _ in events)
    assert kills.count >= 3, f"only {kills.count} kills landed"
    assert waited > 0, "no call ever waited for its token: the limit was not under contention"
    print(
        f"\nrate limits SIGKILL loop: {kills.count} kills, {EXECUTIONS} executions, {calls} calls "
        f"({calls - EXECUTIONS} re-run after a kill), {waited} waits for a token; "
        f"never more than {PER_SECOND} tokens in a second, none spent twice"
    )


def check_tokens(events: list[tuple[str, str, datetime, dict[str, Any]]]) -> int:
    """Every start of the limited node ran on a token of its own, due by then, and the tokens keep the
    limit in every window of a second. Answers the number of calls (starts)."""
    starts = [(at, d) for _, kind, at, d in events if kind == "StepStarted" and d["step_name"] == "call"]
    assert all("token" in data for _, data in starts), "a start of a rate-limited node without its token"
    tokens = sorted(datetime.fromisoformat(data["token"]) for _, data in starts)
    assert [t for t, n in Counter(tokens).items() if n > 1] == [], "a token spent by two starts"
    early = [(at, data["token"]) for at, data in starts if at < datetime.fromisoformat(data["token"])]
    assert early == [], "a call started before its token was due"
    second = timedelta(seconds=1)
    crowded = [
        (tokens[i], tokens[i + PER_SECOND])
        for i in range(len(tokens) - PER_SECOND)
        if tokens[i + PER_SECOND] - tokens[i] < second
    ]
    assert crowded == [], f"more than {PER_SECOND} tokens within a second"
    return len(starts)


def check_nodes(events: list[tuple[str, str, datetime, dict[str, Any]]]) -> None:
    """Each execution completed once, each node completed once and never started after its completion."""
    ended = Counter(eid for eid, kind, _, _ in events if kind == "Completed")
    assert ended == {f"r{n:02}": 1 for n in range(EXECUTIONS)}
    done: Counter[tuple[str, str]] = Counter()
    rerun: list[tuple[str, str]] = []
    for eid, kind, _, data in events:
        node = (eid, data.get("step_name", ""))
        if kind == "StepCompleted":
            done[node] += 1
        elif kind == "StepStarted" and done[node]:
            rerun.append(node)
    assert rerun == [], "a recorded node ran again"
    assert done == {(f"r{n:02}", step): 1 for n in range(EXECUTIONS) for step in ("call", "label")}
