"""For real: `django.tasks` tasks on Flowdeck's backend in a `flowdeck_workers` process SIGKILLed mid-task,
on PostgreSQL, then finished by another worker process.

Three executions are enqueued from a management shell (`tests/acceptance/crash_tasks.py`): `held`, whose
call blocks until the test lets it go; `quick`, which ends at once; and a flow whose step enqueues `quick`
and then blocks. The first worker is killed once `held` and the step are mid-call and both `quick` tasks
have ended. The second worker must re-run `held` (killed before its result was recorded: a second call)
and the step (replayed), but neither `quick` (their results were recorded): four executions, each ended
once, the step's task still one, and `get_result` reads each task SUCCESSFUL with the worker of each
claim.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.support import Background, environment, manage, ok
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DATABASE = f"flowdeck_accept_tasks_{os.getpid()}"
SETTINGS = "tests.acceptance.tasks_settings"
QUICK = "tests.acceptance.crash_tasks.quick"
WORKER = [
    "flowdeck_workers",
    "--workers",
    "1",
    "--lease",
    "1",
    "--renew-every",
    "0.3",
    "--shutdown-grace",
    "0",
]

ENQUEUE = """
import json
from flowdeck.console import client
from tests.acceptance import crash_tasks as t
folder = {folder!r}
ids = {{
    "held": t.held.enqueue(folder).id,
    "quick": t.quick.enqueue(folder, "quick").id,
    "flow": client.start("tasks-crash.step", folder=folder),
}}
print(json.dumps(ids))
"""

READ = """
import json
from flowdeck.console import client
from tests.acceptance import crash_tasks as t
ids = json.loads({ids!r})
ids["from_step"] = client.result(ids["flow"], timeout=60).task_id
results = {{
    name: task.get_result(ids[name])
    for name, task in (("held", t.held), ("quick", t.quick), ("from_step", t.quick))
}}
print(json.dumps({{
    name: [str(r.status), r.return_value, len(r.worker_ids), r.id == ids[name]] for name, r in results.items()
}}))
"""


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(f"{POSTGRES_SERVER}/{DATABASE}", autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def calls(folder: Path, name: str) -> int:
    path = folder / f"{name}.calls"
    return len(path.read_text().splitlines()) if path.exists() else 0


def ended(flow_id: str | None = None) -> int:
    sql = "SELECT count(*) FROM flowstore_execution WHERE status_kind IN ('completed', 'failed', 'cancelled')"
    rows = query(sql + " AND flow_id = %s", flow_id) if flow_id else query(sql)
    return int(rows[0][0])


def _database(action: str) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        if action == "create":
            conn.execute(f'CREATE DATABASE "{DATABASE}"')


def test_a_task_killed_mid_call_runs_again_once_and_a_recorded_one_does_not(tmp_path: Path) -> None:
    require_postgres()
    _database("create")
    url = f"{POSTGRES_SERVER}/{DATABASE}"
    env = environment(url, DJANGO_SETTINGS_MODULE=SETTINGS)
    folder = tmp_path / "calls"
    folder.mkdir()
    workers: list[Background] = []
    try:
        ok(manage(url, "migrate", "--verbosity", "0", env=env))
        enqueued = ok(manage(url, "shell", "-c", ENQUEUE.format(folder=str(folder)), env=env))
        ids = json.loads(enqueued.stdout.strip().splitlines()[-1])
        first = Background.manage("worker-a", url, tmp_path, *WORKER, DJANGO_SETTINGS_MODULE=SETTINGS)
        workers.append(first)
        first.wait_for(
            lambda: calls(folder, "held") == 1 and calls(folder, "step") == 1 and ended(QUICK) == 2,
            "held and the step mid-call, both quick tasks ended",
        )
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        (folder / "go").touch()
        second = Background.manage("worker-b", url, tmp_path, *WORKER, DJANGO_SETTINGS_MODULE=SETTINGS)
        workers.append(second)
        second.wait_for(lambda: ended() == 4, "every execution ended")
        assert query("SELECT count(*) FROM flowstore_execution") == [(4,)]  # the replayed step added none
        assert query("SELECT DISTINCT status_kind FROM flowstore_execution") == [("completed",)]
        read = ok(manage(url, "shell", "-c", READ.format(ids=json.dumps(ids)), env=env))
        results = json.loads(read.stdout.strip().splitlines()[-1])
        assert results == {
            "held": ["SUCCESSFUL", 2, 2, True],  # its second call's value, one worker id per claim
            "quick": ["SUCCESSFUL", 1, 1, True],
            "from_step": ["SUCCESSFUL", 1, 1, True],
        }, results
        counted = {name: calls(folder, name) for name in ("held", "quick", "step", "from-step")}
        assert counted == {"held": 2, "quick": 1, "step": 2, "from-step": 1}
    finally:
        for worker in workers:
            worker.close()
        _database("drop")
