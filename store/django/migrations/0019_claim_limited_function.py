"""The limited claim in one statement (PostgreSQL only; SQLite claims in its IMMEDIATE transaction).

`flowstore_claim_limited` (store/django/concurrency_queries.py, `CLAIM_FUNCTION`): the advisory locks of the
limited workflows, then the candidates and the stamp, each a statement of its own, so that each snapshot is
taken after the locks. A function, not a table: the slots are still the limited rows under a live lease
(`store.concurrency`), so nothing else records a holder, and a lapsed lease frees its slot as before.
"""

from django.db import migrations

from flowdeck.store.django import concurrency_queries
from flowdeck.store.django.tx import Tx


def create(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        Tx(cursor, connection).execute(concurrency_queries.CLAIM_FUNCTION)


def drop(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        Tx(cursor, connection).execute(concurrency_queries.DROP_CLAIM_FUNCTION)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0018_event_partitions"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
