"""PostgreSQL: every number a recorded value holds, by its path, in `flowstore_field_number`, so that a search
by range (`field:order.total>=990`) reads a btree instead of every value of the field (W7: 1,000,000 rows,
p95 1,034 ms before, from a jsonpath comparison no index could answer).

One row per number leaf of a field's JSON value: the field's execution and name, the leaf's path spelled as
`store.django.field_search.number_path` spells a search's path (`."items"[0]."qty"`; the root is ``), and
the number as `numeric` (exact, as jsonb holds it). Strings, booleans and nulls have no row: a range compares
numbers only, as the jsonpath comparison it replaces did.

The database keeps it, as it keeps the status tally (0010): statement triggers on `flowstore_field` add the
numbers of the rows a statement inserted (every write path: a start's inputs, a node's value, a signal's,
group commit's batches) and remove those of the rows it deleted (a purge, the ORM's cascade), and its
TRUNCATE trigger empties it (the tests' flush; a DELETE, as a TRUNCATE listing both tables, as the bench's
does, may not truncate again what it is truncating). No Django model, for the tally's reason, and no foreign key:
0011 measured what a per-row constraint check costs the write path. Fields are written once and never
updated, so insert and delete are the only changes to follow. A value jsonb refuses (a `\\u0000` escape)
has no numbers here, as it has no entry in the GIN index (0007).

The existing values are carried over in the migration itself. SQLite has no such table: it reads the values
with json_extract, row by row, as before.
"""

from typing import Any

from django.db import migrations

NUMBERS = "flowstore_field_number"

POSTGRES = [
    f"""CREATE TABLE {NUMBERS} (execution_id varchar(255) NOT NULL, name varchar(1024) NOT NULL,
    path text NOT NULL, value numeric NOT NULL)""",
    # the search's index: name and path equal, the number by range; the id rides along for an index-only scan
    f"CREATE INDEX fs_field_number_range ON {NUMBERS} (name, path, value) INCLUDE (execution_id)",
    # the delete trigger's
    f"CREATE INDEX fs_field_number_execution ON {NUMBERS} (execution_id)",
    # The number leaves of a JSON document with their paths, walking objects and arrays (keys JSON-quoted,
    # as json.dumps(key, ensure_ascii=False) spells them; array indexes from 0).
    """CREATE FUNCTION flowstore_json_numbers(doc jsonb) RETURNS TABLE (path text, value numeric)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        WITH RECURSIVE leaf(path, v) AS (
            SELECT ''::text, doc
            UNION ALL
            SELECT leaf.path || step.path, step.v FROM leaf CROSS JOIN LATERAL (
                SELECT '.' || to_jsonb(e.key)::text, e.value
                FROM jsonb_each(CASE WHEN jsonb_typeof(leaf.v) = 'object' THEN leaf.v END) AS e
                UNION ALL
                SELECT '[' || (a.n - 1) || ']', a.value
                FROM jsonb_array_elements(CASE WHEN jsonb_typeof(leaf.v) = 'array' THEN leaf.v END)
                    WITH ORDINALITY AS a(value, n)
            ) AS step(path, v)
        )
        SELECT path, v::text::numeric FROM leaf WHERE jsonb_typeof(v) = 'number'
    $$""",
    # a value with no digit holds no number: it costs one regex test, not a parse
    f"""CREATE FUNCTION flowstore_field_numbers_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {NUMBERS} (execution_id, name, path, value)
        SELECT f.execution_id, f.name, n.path, n.value
        FROM field_rows f CROSS JOIN LATERAL flowstore_json_numbers(f.value::jsonb) AS n
        WHERE f.value ~ '[0-9]' AND strpos(f.value, '\\u0000') = 0;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION flowstore_field_numbers_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM {NUMBERS} n USING field_rows f
        WHERE n.execution_id = f.execution_id AND n.name = f.name;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION flowstore_field_numbers_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN DELETE FROM {NUMBERS}; RETURN NULL; END $$""",
    """CREATE TRIGGER flowstore_field_numbers_insert AFTER INSERT ON flowstore_field
    REFERENCING NEW TABLE AS field_rows FOR EACH STATEMENT EXECUTE FUNCTION flowstore_field_numbers_inserted()""",
    """CREATE TRIGGER flowstore_field_numbers_delete AFTER DELETE ON flowstore_field
    REFERENCING OLD TABLE AS field_rows FOR EACH STATEMENT EXECUTE FUNCTION flowstore_field_numbers_deleted()""",
    """CREATE TRIGGER flowstore_field_numbers_truncate AFTER TRUNCATE ON flowstore_field
    FOR EACH STATEMENT EXECUTE FUNCTION flowstore_field_numbers_truncated()""",
    # what is already recorded
    f"""INSERT INTO {NUMBERS} (execution_id, name, path, value)
    SELECT f.execution_id, f.name, n.path, n.value
    FROM flowstore_field f CROSS JOIN LATERAL flowstore_json_numbers(f.value::jsonb) AS n
    WHERE f.value ~ '[0-9]' AND strpos(f.value, '\\u0000') = 0""",
    f"ANALYZE {NUMBERS}",
]
POSTGRES_BACK = [
    "DROP TRIGGER IF EXISTS flowstore_field_numbers_insert ON flowstore_field",
    "DROP TRIGGER IF EXISTS flowstore_field_numbers_delete ON flowstore_field",
    "DROP TRIGGER IF EXISTS flowstore_field_numbers_truncate ON flowstore_field",
    "DROP FUNCTION IF EXISTS flowstore_field_numbers_inserted()",
    "DROP FUNCTION IF EXISTS flowstore_field_numbers_deleted()",
    "DROP FUNCTION IF EXISTS flowstore_field_numbers_truncated()",
    "DROP FUNCTION IF EXISTS flowstore_json_numbers(jsonb)",
    f"DROP TABLE IF EXISTS {NUMBERS}",
]


def _forward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES:
            schema_editor.execute(statement)


def _backward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_BACK:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0012_search_trigram"),
    ]

    operations = [migrations.RunPython(_forward, _backward)]
