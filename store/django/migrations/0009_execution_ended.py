"""An execution's end time, `ended`, kept by the database itself: a trigger sets it to `updated` on the one
write that turns a status completed, failed or cancelled (or inserts a row already ended), on PostgreSQL
and on SQLite alike. The overview's endings per minute read it through `fs_exec_ended`. Node writes never
change it, so they stay HOT updates (an index on `updated` itself would make every node write insert
into every index: see store.django.models.Execution.Meta). Rows already ended get theirs from `updated`,
which nothing changes once an execution has ended."""

from django.db import migrations, models

ENDED = "('completed', 'failed', 'cancelled')"

POSTGRES = [
    """CREATE FUNCTION flowstore_execution_ended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.ended := NEW.updated; RETURN NEW; END $$""",
    f"""CREATE TRIGGER flowstore_execution_ended_update BEFORE UPDATE ON flowstore_execution FOR EACH ROW
    WHEN (NEW.status_kind IN {ENDED} AND OLD.status_kind IS DISTINCT FROM NEW.status_kind)
    EXECUTE FUNCTION flowstore_execution_ended()""",
    f"""CREATE TRIGGER flowstore_execution_ended_insert BEFORE INSERT ON flowstore_execution FOR EACH ROW
    WHEN (NEW.status_kind IN {ENDED}) EXECUTE FUNCTION flowstore_execution_ended()""",
]
POSTGRES_BACK = [
    "DROP TRIGGER IF EXISTS flowstore_execution_ended_update ON flowstore_execution",
    "DROP TRIGGER IF EXISTS flowstore_execution_ended_insert ON flowstore_execution",
    "DROP FUNCTION IF EXISTS flowstore_execution_ended()",
]
SQLITE = [
    f"""CREATE TRIGGER flowstore_execution_ended_update AFTER UPDATE OF status_kind ON flowstore_execution
    FOR EACH ROW WHEN NEW.status_kind IN {ENDED} AND OLD.status_kind IS NOT NEW.status_kind
    BEGIN UPDATE flowstore_execution SET ended = NEW.updated WHERE id = NEW.id; END""",
    f"""CREATE TRIGGER flowstore_execution_ended_insert AFTER INSERT ON flowstore_execution
    FOR EACH ROW WHEN NEW.status_kind IN {ENDED}
    BEGIN UPDATE flowstore_execution SET ended = NEW.updated WHERE id = NEW.id; END""",
]
SQLITE_BACK = [
    "DROP TRIGGER IF EXISTS flowstore_execution_ended_update",
    "DROP TRIGGER IF EXISTS flowstore_execution_ended_insert",
]
BACKFILL = f"UPDATE flowstore_execution SET ended = updated WHERE status_kind IN {ENDED} AND ended IS NULL"


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
        ("flowstore", "0008_overview_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="execution",
            name="ended",
            field=models.DateTimeField(
                blank=True,
                help_text="when it ended: set once, by the database itself (migration 0009's trigger), to "
                "`updated` as its status turns completed, failed or cancelled",
                null=True,
            ),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("ended__isnull", False)),
                fields=["ended", "status_kind"],
                name="fs_exec_ended",
            ),
        ),
    ]
