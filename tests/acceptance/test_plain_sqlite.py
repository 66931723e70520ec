"""SQLite as `django-admin startproject` configures it (ENGINE and NAME, no OPTIONS: deferred transactions,
the rollback journal, a 5 s busy timeout) under a worker process and concurrent starts from several
processes, each from several threads: every execution completes and none stops. The store makes SQLite
safe for its own connections (WAL, a 30 s busy timeout, IMMEDIATE), and a step body's ORM write that meets
a locked database is retried (`is_transient`), not taken for a mistake (F0001)."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.acceptance.support import MANAGE, PYTHON, ROOT, Background, environment, manage, ok

pytestmark = pytest.mark.slow

STARTERS = 4  # processes
THREADS = 4  # per starter
PER_STARTER = 50
EXECUTIONS = STARTERS * PER_STARTER

SETTINGS = """
from flowdeck.console.settings import *  # noqa: F403

# What `django-admin startproject` writes, and nothing more.
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": {name!r}}}}}
FLOWDECK_FLOW_MODULES = ["tests.acceptance.plain_sqlite_flows"]
"""


def _query(path: Path, sql: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as conn:
        return conn.execute(sql).fetchall()


def _ended(path: Path) -> int:
    return int(_query(path, "SELECT count(*) FROM flowstore_execution WHERE status_kind != 'running'")[0][0])


def test_startprojects_sqlite_runs_two_hundred_orders_with_concurrent_starts(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    (tmp_path / "plain_sqlite_settings.py").write_text(SETTINGS.format(name=str(database)))
    env = environment(
        f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="plain_sqlite_settings",
        PYTHONPATH=f"{tmp_path}:{ROOT}",
    )
    ok(manage("", "migrate", "--verbosity", "0", env=env))
    worker = Background(
        "flowdeck_workers", [PYTHON, MANAGE, "flowdeck_workers", "--batch-size", "8"], env, tmp_path
    )
    starters: list[subprocess.Popen[str]] = []
    try:
        worker.wait_for_output("worker(s) serving", timeout=60)
        for n in range(STARTERS):
            code = (
                "from tests.acceptance.plain_sqlite_flows import start_many; "
                f"start_many({PER_STARTER}, 'p{n}', {THREADS})"
            )
            starters.append(
                subprocess.Popen(
                    [PYTHON, MANAGE, "shell", "-c", code],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for starter in starters:
            out, err = starter.communicate(timeout=120)
            assert starter.returncode == 0, f"a starter failed\n{out}\n{err}"
        worker.wait_for_count(lambda: _ended(database), EXECUTIONS, "ended executions")

        statuses = _query(database, "SELECT status_kind, count(*) FROM flowstore_execution GROUP BY 1")
        assert statuses == [("completed", EXECUTIONS)], worker.explain()
        shipped = _query(database, "SELECT count(*) FROM flowstore_field WHERE name = 'shipped'")
        assert shipped == [(EXECUTIONS,)]
        tracked = _query(database, "SELECT count(DISTINCT execution_id) FROM fulfilment_posting")
        assert tracked == [(EXECUTIONS,)]
        assert "pausing 30s" not in worker.stderr, worker.explain()
    finally:
        for starter in starters:
            if starter.poll() is None:
                starter.kill()
                starter.wait()
        worker.signal(signal.SIGTERM)
        worker.finish(timeout=60)


def test_a_database_the_store_cannot_put_in_wal_is_refused_at_start_up_in_one_line(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    settings = tmp_path / "plain_sqlite_settings.py"
    settings.write_text(SETTINGS.format(name=str(database)))
    env = environment(
        f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="plain_sqlite_settings",
        PYTHONPATH=f"{tmp_path}:{ROOT}",
    )
    ok(manage("", "migrate", "--verbosity", "0", env=env))
    with contextlib.closing(sqlite3.connect(database)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    settings.write_text(SETTINGS.format(name=f"file:{database}?mode=ro"))  # as on a read-only disk
    refused = manage("", "flowdeck_workers", env=env, cold=True)  # the settings file changed under it
    assert refused.returncode != 0, refused.explain()
    assert "Traceback" not in refused.stderr, refused.explain()
    lines = [line for line in refused.stderr.splitlines() if "CommandError" in line]
    assert len(lines) == 1, refused.explain()
    assert "cannot use WAL" in lines[0], refused.explain()
    assert "in a folder the workers can write, or use PostgreSQL" in lines[0], refused.explain()
