"""PostgreSQL: a GIN index (jsonb_path_ops) on each field's value as jsonb, for searching by a recorded value.

The expression must stay the one `store.django.queries.FIELD_JSONB` spells, or the planner cannot use the
index (tests/store/test_field_search_plan.py EXPLAINs a search to hold them together). SQLite has no such
index; it reads the values with json_extract. Nothing to do there.
"""

from typing import Any

from django.db import migrations

_JSONB = "(CASE WHEN strpos(value, '\\u0000') = 0 THEN value::jsonb END)"


def _create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS fs_field_value_jsonb ON flowstore_field USING gin ({_JSONB} jsonb_path_ops)"
        )


def _drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS fs_field_value_jsonb")


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0006_status_kind_count_index"),
    ]

    operations = [migrations.RunPython(_create, _drop)]
