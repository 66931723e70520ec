"""A database made by Flowdeck 0.1 (the console's app label was `console`) carries over to the label
`flowdeck_console`: `migrate` refuses it until `flowdeck_upgrade` ran (one error naming the command), then
the execution, the token, the activity and the permissions it held are all still there.

The databases are 0.1's own: `upgrade_0_1/v0_1.*.sql` are dumps of 0.1's migrations run on SQLite and on
PostgreSQL, seeded by 0.1's `flow` command (an execution `from-0.1`, a token `kept` of `olga`, who holds
`operate_executions`)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.api import conftest as api_support
from tests.store.django_support import POSTGRES_SERVER, require_postgres

ROOT = Path(__file__).resolve().parents[2]
DUMPS = Path(__file__).resolve().parent / "upgrade_0_1"
PROBE = (
    "from django.contrib.auth.models import User; from flowdeck.console.models import Activity, ApiToken; "
    "olga = User.objects.get(username='olga'); "
    "print(olga.has_perm('flowdeck_console.operate_executions'), ApiToken.objects.get().name, "
    "Activity.objects.filter(targets__execution_id='from-0.1').count())"
)


def _manage(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "flowdeck.console.settings",
        "FLOWDECK_SECRET_KEY": "upgrade-test-key-not-secret",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )


def _upgrade_and_read(database_url: str) -> None:
    refused = _manage(database_url, "migrate", "--verbosity", "0")
    assert refused.returncode != 0
    assert "flowdeck.E001" in refused.stderr, refused.stderr
    assert "run `manage.py flowdeck_upgrade --database default` before migrate" in refused.stderr

    upgraded = _manage(database_url, "flowdeck_upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert "table console_activity -> flowdeck_console_activity" in upgraded.stdout  # rename: keep
    migrated = _manage(database_url, "migrate", "--verbosity", "0")
    assert migrated.returncode == 0, migrated.stderr

    listed = _manage(database_url, "flowdeck", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert '"from-0.1"' in listed.stdout
    probe = _manage(database_url, "shell", "--no-imports", "-c", PROBE)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["True", "kept", "1"]
    again = _manage(database_url, "flowdeck_upgrade")
    assert (again.returncode, again.stdout.strip()) == (
        0,
        "nothing to upgrade: no Flowdeck 0.1 console in this database",
    )


@pytest.mark.slow
def test_a_0_1_sqlite_database_keeps_its_executions_tokens_and_permissions(tmp_path: Path) -> None:
    path = tmp_path / "v0_1.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript((DUMPS / "v0_1.sqlite.sql").read_text())
    conn.close()
    _upgrade_and_read(f"sqlite:///{path}")


@pytest.mark.slow
@pytest.mark.postgres
def test_a_0_1_postgresql_database_keeps_its_executions_tokens_and_permissions() -> None:
    require_postgres()
    name = f"{api_support.DB_PREFIX}{os.getpid()}_upgrade_0_1"
    api_support._create_database(name)
    try:
        with psycopg.connect(f"{POSTGRES_SERVER}/{name}", autocommit=True) as conn:
            conn.execute((DUMPS / "v0_1.postgres.sql").read_text())  # type: ignore[arg-type]
        _upgrade_and_read(f"{POSTGRES_SERVER}/{name}")
    finally:
        api_support._drop_database(name)
