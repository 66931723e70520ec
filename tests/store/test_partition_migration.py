"""Migration 0018 carries an existing PostgreSQL database over: a database migrated to 0017 with executions
and their events (recent ones, one older than the days given partitions, an event whose execution is gone)
keeps every event row, each in the partition of its execution's creation, the ids go on from the last one,
unapplying it gives the plain table back with the same rows, and applying it again partitions them again."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.api import conftest as api_support
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = pytest.mark.postgres

NOW = datetime.now(UTC).replace(microsecond=0)
EXECUTIONS = {"recent": NOW - timedelta(days=2), "today": NOW, "ancient": NOW - timedelta(days=400)}
EVENT_ROWS = "SELECT id, execution_id, seq, flow_id, kind, timestamp, data FROM flowstore_event ORDER BY id"


def _seed(conn: psycopg.Connection[Any]) -> None:
    for serial, (eid, created) in enumerate(EXECUTIONS.items(), 1):
        conn.execute(
            "INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, cancel_requested,"
            " cancel_reason, last_seq, serial, created, updated) VALUES (%s, 'wf', 'h', '{}', 'completed',"
            " false, '', 3, %s, %s, %s)",
            (eid, serial, created, created),
        )
        for seq in (1, 2, 3):
            conn.execute(
                "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data)"
                " VALUES (%s, %s, 'wf', 'Created', %s, %s)",
                (eid, seq, created + timedelta(seconds=seq), f'{{"n": {seq}}}'),
            )
    conn.execute(  # an event whose execution was deleted without it (no constraint since 0011)
        "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data)"
        " VALUES ('gone', 1, 'wf', 'Created', %s, '{}')",
        (NOW - timedelta(days=1),),
    )


def test_migration_0018_carries_the_history_over_and_back() -> None:
    require_postgres()
    name = f"{api_support.DB_PREFIX}{os.getpid()}_partition_migration"
    api_support._create_database(name)
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{name}",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
    }
    url = f"{POSTGRES_SERVER}/{name}"
    try:
        api_support._run(env, "manage.py", "migrate", "flowstore", "0017", "--verbosity", "0")
        with psycopg.connect(url, autocommit=True) as conn:
            _seed(conn)
            before = conn.execute(EVENT_ROWS).fetchall()

        api_support._run(env, "manage.py", "migrate", "flowstore", "--verbosity", "0")

        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(EVENT_ROWS).fetchall() == before
            placed = conn.execute(
                "SELECT execution_id, tableoid::regclass::text, exec_created FROM flowstore_event"
                " WHERE seq = 1 ORDER BY execution_id"
            ).fetchall()
            day = {eid: f"flowstore_event_p{created:%Y%m%d}" for eid, created in EXECUTIONS.items()}
            assert placed == [
                ("ancient", "flowstore_event_default", EXECUTIONS["ancient"]),  # before the days made
                # an orphan event: its own time for a key
                ("gone", f"flowstore_event_p{NOW - timedelta(days=1):%Y%m%d}", NOW - timedelta(days=1)),
                ("recent", day["recent"], EXECUTIONS["recent"]),
                ("today", day["today"], EXECUTIONS["today"]),
            ]
            (new_id,) = conn.execute(
                "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data,"
                " exec_created) VALUES ('today', 4, 'wf', 'Completed', %s, '{}', %s) RETURNING id",
                (NOW, NOW),
            ).fetchone()
            assert new_id == max(row[0] for row in before) + 1
            with pytest.raises(psycopg.errors.UniqueViolation):
                conn.execute(
                    "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data,"
                    " exec_created) VALUES ('today', 4, 'wf', 'Completed', %s, '{}', %s)",
                    (NOW, NOW),
                )
            after = conn.execute(EVENT_ROWS).fetchall()

        api_support._run(env, "manage.py", "migrate", "flowstore", "0017", "--verbosity", "0")

        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(EVENT_ROWS).fetchall() == after
            assert conn.execute(
                "SELECT relkind FROM pg_class WHERE relname = 'flowstore_event'"
            ).fetchone() == ("r",)

        # and forward again: the reversed schema is one 0018 applies to (the same rows, partitioned again)
        api_support._run(env, "manage.py", "migrate", "flowstore", "--verbosity", "0")

        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute(EVENT_ROWS).fetchall() == after
            assert conn.execute(
                "SELECT relkind FROM pg_class WHERE relname = 'flowstore_event'"
            ).fetchone() == ("p",)
    finally:
        api_support._drop_database(name)
