"""The ledger without a foreign-key constraint to its execution (issue 16).

Every statement that inserts events locks their execution's row in the same statement, and a purge deletes
the ledger with its executions, so the constraint only re-checked, per event row and at every commit, what
the statement had just locked: about a fifth of the database's CPU per node in W1. The ORM's relation (and
its cascade on delete) is unchanged. On PostgreSQL this drops the constraint; SQLite rebuilds the table."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0010_status_tally"),
    ]

    operations = [
        migrations.AlterField(
            model_name="event",
            name="execution",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="events",
                to="flowstore.execution",
            ),
        ),
    ]
