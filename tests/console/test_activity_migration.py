"""The activity migration (console 0004) applies and unapplies: on the test database (SQLite unless
DATABASE_URL says otherwise), and on PostgreSQL always, in a database of its own."""

from __future__ import annotations

import os

import psycopg
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.api import conftest as api_support
from tests.store.django_support import POSTGRES_SERVER, require_postgres

BEFORE = [("flowdeck_console", "0003_grant_run_to_operators")]
AFTER = [("flowdeck_console", "0004_activity")]
TABLES = {"flowdeck_console_activity", "flowdeck_console_activityexecution"}


def _migrate(targets: list[tuple[str, str]]) -> set[str]:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return TABLES & set(connection.introspection.table_names())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_activity_tables_come_and_go_with_the_migration() -> None:
    assert _migrate(BEFORE) == set()
    assert _migrate(AFTER) == TABLES
    from flowdeck.console.models import Activity, ActivityExecution

    row = Activity.objects.create(actor="olga", source="console", action="cancel", outcome="accepted")
    ActivityExecution.objects.create(activity=row, execution_id="e-1")
    assert list(Activity.objects.filter(targets__execution_id="e-1").values_list("actor", flat=True)) == [
        "olga"
    ]
    _migrate([])  # back to the newest migrations, as every later test expects


@pytest.mark.postgres
def test_the_activity_migration_applies_on_postgresql() -> None:
    require_postgres()
    name = f"{api_support.DB_PREFIX}{os.getpid()}_activity_migration"
    api_support._create_database(name)
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{name}",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
    }
    try:

        def tables() -> set[str]:
            with psycopg.connect(f"{POSTGRES_SERVER}/{name}") as conn:
                found = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
            return TABLES & {t for (t,) in found}

        api_support._run(env, "manage.py", "migrate", "--verbosity", "0")
        assert tables() == TABLES
        api_support._run(env, "manage.py", "migrate", "flowdeck_console", "0003", "--verbosity", "0")
        assert tables() == set()
        api_support._run(env, "manage.py", "migrate", "flowdeck_console", "--verbosity", "0")
        assert tables() == TABLES
    finally:
        api_support._drop_database(name)
