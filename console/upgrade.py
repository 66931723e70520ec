"""Upgrading a database from Flowdeck 0.1, whose console app had the label `console`, to the label
`flowdeck_console` (docs/operating.md, "Upgrading from 0.1").

The label names the app's rows in `django_migrations`, its content types (and so its permissions, which
hang off them) and, by Django's default, its tables. A host project may have an app labelled `console` of
its own, so the migration loader cannot be told that `console`'s rows are ours; the move is one explicit
step, `manage.py flowdeck_upgrade`, taken before `migrate`, and the system check below refuses `migrate`
until it is taken. The store's app keeps its label (`flowstore`, already Flowdeck's own) and its tables.

Only a 0.1 database is moved: its `django_migrations` rows for `console` include one of 0.1's own
migrations, and its `console_apitoken` table exists. No SQL is written here: the tables are renamed by the
database's schema editor, the rows through Django's models, all in one transaction.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as installed_apps
from django.core import checks
from django.db import connections, transaction
from django.db.migrations.recorder import MigrationRecorder

__all__ = ["OLD_LABEL", "NEW_LABEL", "UpgradeRefused", "check_labels", "needs_upgrade", "upgrade"]

OLD_LABEL = "console"
NEW_LABEL = "flowdeck_console"
# The console's tables in 0.1 (by model name) and a migration name no other app is likely to carry.
TABLES_0_1 = ("apitoken", "activity", "activityexecution", "savedview")
SIGNATURE = "0002_token_expiry_and_revocation"


class UpgradeRefused(Exception):
    """The database cannot be upgraded from Flowdeck 0.1 as it stands."""


def needs_upgrade(using: str = "default") -> bool:
    """Whether `using` holds a Flowdeck 0.1 console under the label `console`, not yet moved."""
    connection = connections[using]
    tables = set(connection.introspection.table_names())
    if MigrationRecorder.Migration._meta.db_table not in tables or f"{OLD_LABEL}_apitoken" not in tables:
        return False
    recorder = MigrationRecorder(connection)
    return recorder.migration_qs.filter(app=OLD_LABEL, name=SIGNATURE).exists()


def upgrade(using: str = "default") -> list[str]:
    """Move a 0.1 console to the new label: tables, migration rows, content types. Answers what it did."""
    if not needs_upgrade(using):
        return []
    connection = connections[using]
    recorder = MigrationRecorder(connection)
    if recorder.migration_qs.filter(app=NEW_LABEL).exists():
        raise UpgradeRefused(
            f"this database has migrations of both '{OLD_LABEL}' and '{NEW_LABEL}' (migrate ran before the "
            f"upgrade): see 'Upgrading from 0.1' in docs/operating.md"
        )
    done: list[str] = []
    # The editor only spells the rename (not entered: SQLite's refuses to open inside a transaction, and a
    # rename needs none of what entering does); both databases roll the whole step back on an error.
    editor = connection.schema_editor(atomic=False)
    with transaction.atomic(using=using):
        tables = set(connection.introspection.table_names())
        for model in TABLES_0_1:
            old, new = f"{OLD_LABEL}_{model}", f"{NEW_LABEL}_{model}"
            if old in tables and new not in tables:
                names = {"old_table": editor.quote_name(old), "new_table": editor.quote_name(new)}
                editor.execute(editor.sql_rename_table % names)
                done.append(f"table {old} -> {new}")
        moved = recorder.migration_qs.filter(app=OLD_LABEL).update(app=NEW_LABEL)
        done.append(f"{moved} migration rows")
        done.extend(_move_content_types(using))
    return done


def _move_content_types(using: str) -> list[str]:
    if not installed_apps.is_installed("django.contrib.contenttypes"):
        return []
    from django.contrib.contenttypes.models import ContentType

    moved = ContentType.objects.using(using).filter(app_label=OLD_LABEL).update(app_label=NEW_LABEL)
    ContentType.objects.clear_cache()
    return [f"{moved} content types (their permissions follow)"]


def check_labels(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`migrate` (and `check --database`) refuse a 0.1 database that was not upgraded: migrating it as it
    stands would make empty tables under the new label beside the old ones."""
    errors: list[checks.CheckMessage] = []
    for alias in databases or ():
        if needs_upgrade(alias):
            errors.append(
                checks.Error(
                    f"database '{alias}' holds Flowdeck 0.1's console under the label '{OLD_LABEL}'",
                    hint=f"run `manage.py flowdeck_upgrade --database {alias}` before migrate "
                    "(docs/operating.md, 'Upgrading from 0.1')",
                    id="flowdeck.E001",
                )
            )
    return errors
