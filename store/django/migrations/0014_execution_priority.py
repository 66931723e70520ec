"""An execution's priority (`store.claim_order`): a column with a default in the database too (rows written
by statements that name none, such as an older process's during a rolling upgrade, get 0), and the claim's
index in priority order beside the one in creation order (its fair-share turns). The column never changes
after the row is created, so a node's write stays a HOT update.

The column is added by a statement of our own, not Django's AddField: of a NOT NULL column that rebuilds the
table on SQLite, and a rebuilt table has lost its triggers (0009's `ended`, 0010's status tally).
"""

from django.db import migrations, models

# The same statement on both backends (PostgreSQL 11+ adds a column with a constant default without
# rewriting the table).
ADD = "ALTER TABLE flowstore_execution ADD COLUMN priority smallint NOT NULL DEFAULT 0"
DROP = "ALTER TABLE flowstore_execution DROP COLUMN priority"


def _field() -> models.SmallIntegerField:
    return models.SmallIntegerField(
        db_default=0, default=0, help_text="claimed in this order, higher first (store.claim_order)"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0013_field_numbers"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddField(model_name="execution", name="priority", field=_field())],
            database_operations=[migrations.RunSQL(ADD, DROP)],
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("status_kind__in", ("running", "compensating"))),
                fields=["flow_id", "hash", "-priority", "created", "serial"],
                name="fs_exec_claimable_priority",
            ),
        ),
    ]
