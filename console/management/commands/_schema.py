"""A database whose schema is missing (migrate never ran, or a deploy skipped it) is refused in one line.

Without the check, the first query fails deep inside the store (`no such table: flowstore_workflow`, or a
traceback from the token verb). Django's migration executor answers what is unapplied, from the
`django_migrations` table alone (tens of milliseconds, against a second for the command's start-up).

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

__all__ = ["require_schema"]


def require_schema(alias: str) -> None:
    """Nothing when every migration is applied on `alias`; otherwise a CommandError (exit 2) saying to
    migrate, naming the database (its file for SQLite, its name otherwise: never a password)."""
    connection = connections[alias]
    try:
        executor = MigrationExecutor(connection)
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        raise CommandError(f"the database could not be used: {error}") from None
    if unapplied:
        name = connection.settings_dict.get("NAME") or alias
        raise CommandError(
            f"the database {name} is not migrated ({len(unapplied)} migration(s) to apply): "
            "run `python manage.py migrate` (or `flowdeck migrate`) first",
            returncode=2,
        )
