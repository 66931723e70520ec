"""PostgreSQL: trigram indexes (pg_trgm) for the search forms that match text by part, ignoring case.

- `fs_field_value_trgm`: each field's value, as its JSON text, for the `=` (on text), `^=` and `~=` terms
  of `store.django.field_search` (an ILIKE over the text, checked exactly at the path afterwards);
- `fs_exec_message_trgm`: the message of each failed or stopped execution (a failure's error, a stop's
  reason), for the `text:` term; partial, so the rows that have no message cost nothing.

The expressions must stay the ones `store.django.search_queries` spells (`value`, `MESSAGE_TEXT`), or the planner
cannot use them (tests/store/test_field_search_plan.py EXPLAINs the searches). pg_trgm is a trusted
extension (PostgreSQL 13+): a database owner may create it. SQLite has no such index: nothing to do there.
"""

from typing import Any

from django.db import migrations

_MESSAGE = (
    "(CASE WHEN strpos(status, '\\u0000') = 0"
    " THEN coalesce(status::jsonb ->> 'error', status::jsonb ->> 'reason') END)"
)


def _create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS fs_field_value_trgm ON flowstore_field USING gin (value gin_trgm_ops)"
    )
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS fs_exec_message_trgm ON flowstore_execution"
        f" USING gin ({_MESSAGE} gin_trgm_ops) WHERE status_kind IN ('failed', 'stopped')"
    )


def _drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS fs_exec_message_trgm")
        schema_editor.execute("DROP INDEX IF EXISTS fs_field_value_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0011_event_without_constraint"),
    ]

    operations = [migrations.RunPython(_create, _drop)]
