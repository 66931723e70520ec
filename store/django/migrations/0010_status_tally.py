"""The executions per workflow per status kind, kept by the database itself in `flowstore_status_tally`, so
that the overview and `/metrics` read a handful of rows instead of counting a million (W11: an index-only
count of 1,000,000 entries took 60-160 ms of the overview's budget).

The table holds deltas, never a shared counter row: a trigger INSERTs one row per change (an execution
created, its status kind changed, executions deleted), so concurrent writers take no lock in common and
cannot deadlock on it. `store.django.counts.by_status` sums the deltas, and folds them into one row per
(workflow, kind) once they pile up (`queries.COMPACT_STATUS_TALLY`).

The table is no Django model: Django's test flush would empty it apart from the executions (on SQLite in
an order nobody chose, leaving a count without its rows). Deleting executions tallies itself; TRUNCATE,
which fires no row trigger, empties the tally too (PostgreSQL's TRUNCATE trigger). A node's write changes
no status kind, so on PostgreSQL the update trigger's WHEN keeps it from firing at all (and the write HOT).
"""

from django.db import migrations

TALLY = "flowstore_status_tally"

POSTGRES = [
    f"""CREATE TABLE {TALLY} (id bigserial PRIMARY KEY, flow_id varchar(255) NOT NULL,
    status_kind varchar(16) NOT NULL, n bigint NOT NULL)""",
    # Statement triggers for creation and deletion: a bulk insert or a purge writes one delta per
    # (workflow, kind) it touched, not one per row.
    f"""CREATE FUNCTION flowstore_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TALLY} (flow_id, status_kind, n)
        SELECT flow_id, status_kind, count(*) FROM tally_rows GROUP BY flow_id, status_kind;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION flowstore_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TALLY} (flow_id, status_kind, n)
        SELECT flow_id, status_kind, -count(*) FROM tally_rows GROUP BY flow_id, status_kind;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION flowstore_tally_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TALLY} (flow_id, status_kind, n)
        VALUES (OLD.flow_id, OLD.status_kind, -1), (NEW.flow_id, NEW.status_kind, 1);
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION flowstore_tally_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN DELETE FROM {TALLY}; RETURN NULL; END $$""",
    """CREATE TRIGGER flowstore_tally_insert AFTER INSERT ON flowstore_execution
    REFERENCING NEW TABLE AS tally_rows FOR EACH STATEMENT EXECUTE FUNCTION flowstore_tally_inserted()""",
    """CREATE TRIGGER flowstore_tally_delete AFTER DELETE ON flowstore_execution
    REFERENCING OLD TABLE AS tally_rows FOR EACH STATEMENT EXECUTE FUNCTION flowstore_tally_deleted()""",
    """CREATE TRIGGER flowstore_tally_update AFTER UPDATE ON flowstore_execution FOR EACH ROW
    WHEN (OLD.status_kind IS DISTINCT FROM NEW.status_kind OR OLD.flow_id IS DISTINCT FROM NEW.flow_id)
    EXECUTE FUNCTION flowstore_tally_changed()""",
    """CREATE TRIGGER flowstore_tally_truncate AFTER TRUNCATE ON flowstore_execution
    FOR EACH STATEMENT EXECUTE FUNCTION flowstore_tally_truncated()""",
]
POSTGRES_BACK = [
    "DROP TRIGGER IF EXISTS flowstore_tally_insert ON flowstore_execution",
    "DROP TRIGGER IF EXISTS flowstore_tally_delete ON flowstore_execution",
    "DROP TRIGGER IF EXISTS flowstore_tally_update ON flowstore_execution",
    "DROP TRIGGER IF EXISTS flowstore_tally_truncate ON flowstore_execution",
    "DROP FUNCTION IF EXISTS flowstore_tally_inserted()",
    "DROP FUNCTION IF EXISTS flowstore_tally_deleted()",
    "DROP FUNCTION IF EXISTS flowstore_tally_changed()",
    "DROP FUNCTION IF EXISTS flowstore_tally_truncated()",
    f"DROP TABLE IF EXISTS {TALLY}",
]
SQLITE = [
    f"""CREATE TABLE {TALLY} (id integer PRIMARY KEY AUTOINCREMENT, flow_id varchar(255) NOT NULL,
    status_kind varchar(16) NOT NULL, n bigint NOT NULL)""",
    f"""CREATE TRIGGER flowstore_tally_insert AFTER INSERT ON flowstore_execution FOR EACH ROW
    BEGIN INSERT INTO {TALLY} (flow_id, status_kind, n) VALUES (NEW.flow_id, NEW.status_kind, 1); END""",
    f"""CREATE TRIGGER flowstore_tally_delete AFTER DELETE ON flowstore_execution FOR EACH ROW
    BEGIN INSERT INTO {TALLY} (flow_id, status_kind, n) VALUES (OLD.flow_id, OLD.status_kind, -1); END""",
    f"""CREATE TRIGGER flowstore_tally_update AFTER UPDATE OF flow_id, status_kind ON flowstore_execution
    FOR EACH ROW WHEN OLD.status_kind IS NOT NEW.status_kind OR OLD.flow_id IS NOT NEW.flow_id
    BEGIN INSERT INTO {TALLY} (flow_id, status_kind, n)
    VALUES (OLD.flow_id, OLD.status_kind, -1), (NEW.flow_id, NEW.status_kind, 1); END""",
]
SQLITE_BACK = [
    "DROP TRIGGER IF EXISTS flowstore_tally_insert",
    "DROP TRIGGER IF EXISTS flowstore_tally_delete",
    "DROP TRIGGER IF EXISTS flowstore_tally_update",
    f"DROP TABLE IF EXISTS {TALLY}",
]
# The rows already there, counted once; under the triggers' table lock, so no write slips between.
BACKFILL = f"""INSERT INTO {TALLY} (flow_id, status_kind, n)
SELECT flow_id, status_kind, count(*) FROM flowstore_execution GROUP BY flow_id, status_kind"""


def _run(schema_editor, statements: list[str]) -> None:
    with schema_editor.connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def forwards(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    _run(schema_editor, [*(POSTGRES if vendor == "postgresql" else SQLITE), BACKFILL])


def backwards(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    _run(schema_editor, POSTGRES_BACK if vendor == "postgresql" else SQLITE_BACK)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0009_execution_ended"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        # the counts by status read the tally now; the index that served them would only cost writes
        migrations.RemoveIndex(model_name="execution", name="fs_exec_flow_kind"),
    ]
