"""An execution's concurrency limits (`store.concurrency`): its workflow's limit, its key and the key's limit,
as its Created event recorded them, and the index a limited claim counts slot holders with.

The columns are added by statements of our own, not Django's AddField: of a NOT NULL column that rebuilds the
table on SQLite, and a rebuilt table has lost its triggers (0009's `ended`, 0010's status tally). The index
names no claim column, so a claim's write stays a HOT update (0014's note on the claim indexes).
"""

from django.db import migrations, models

# The same statements on both backends (PostgreSQL 11+ adds a column with a constant default without
# rewriting the table).
ADD = [
    "ALTER TABLE flowstore_execution ADD COLUMN concurrency_limit integer NOT NULL DEFAULT 0",
    "ALTER TABLE flowstore_execution ADD COLUMN concurrency_key varchar(255) NULL",
    "ALTER TABLE flowstore_execution ADD COLUMN concurrency_per_key integer NOT NULL DEFAULT 0",
]
DROP = [
    "ALTER TABLE flowstore_execution DROP COLUMN concurrency_per_key",
    "ALTER TABLE flowstore_execution DROP COLUMN concurrency_key",
    "ALTER TABLE flowstore_execution DROP COLUMN concurrency_limit",
]


def _fields() -> list[migrations.AddField]:
    return [
        migrations.AddField(
            model_name="execution",
            name="concurrency_limit",
            field=models.IntegerField(db_default=0, default=0, help_text="its workflow's, 0: none"),
        ),
        migrations.AddField(
            model_name="execution",
            name="concurrency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="execution",
            name="concurrency_per_key",
            field=models.IntegerField(db_default=0, default=0, help_text="its key's, 0: none"),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0015_schedules"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=_fields(),
            database_operations=[
                migrations.RunSQL(add, drop) for add, drop in zip(ADD, reversed(DROP), strict=True)
            ],
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("status_kind__in", ("running", "compensating")))
                & (models.Q(("concurrency_limit__gt", 0)) | models.Q(("concurrency_per_key__gt", 0))),
                fields=["flow_id", "concurrency_key"],
                name="fs_exec_slot_holders",
            ),
        ),
    ]
