"""The history in time partitions (issue 32, PostgreSQL only; SQLite keeps its table).

`flowstore_event` becomes a table partitioned by RANGE on `exec_created`, its execution's creation: one
partition per UTC day and a DEFAULT one (store/django/partition_queries.py says why). The rows are carried
over: days from the oldest execution's (at most `BACK` days ago; older rows go to the DEFAULT partition and
leave by the batched delete) to `partitions.AHEAD` days from today get a partition, then every event is
copied with its execution's creation, and the old table is dropped. The copy rewrites the history once: on
a large database run it in a maintenance window (docs/operating.md, "Retention by partitions").

The model is unchanged (Django's state has no `exec_created`): the column is the database's, written by the
store's own statements, which supply it on PostgreSQL.
"""

from datetime import UTC, datetime, timedelta

from django.db import migrations

from flowdeck.store.django import partition_queries, partitions
from flowdeck.store.django.tx import Tx

BACK = 92  # days of existing history given partitions of their own


def partition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        tx = Tx(cursor, connection)
        tx.execute(partition_queries.CREATE_PARTITIONED)
        today = datetime.now(UTC).date()
        (oldest,) = tx.one(partition_queries.OLDEST)
        first = today if oldest is None else max(oldest.astimezone(UTC).date(), today - timedelta(days=BACK))
        partitions.prepare(tx, first, today + timedelta(days=partitions.AHEAD))
        tx.execute(partition_queries.COPY_EVENTS)


def unpartition(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        Tx(cursor, connection).execute(partition_queries.UNPARTITION)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0017_rate_buckets"),
    ]

    operations = [migrations.RunPython(partition, unpartition, elidable=False)]
