"""The claim-token source: a sequence on PostgreSQL (no row lock shared by every claim), the counter row on
SQLite (its writes are serialized by BEGIN IMMEDIATE anyway)."""

from django.db import migrations


def create_token_source(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE SEQUENCE IF NOT EXISTS flowstore_claim_token START 1")
    else:
        counter = apps.get_model("flowstore", "TokenCounter")
        counter.objects.using(schema_editor.connection.alias).get_or_create(id=1, defaults={"value": 0})


def drop_token_source(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP SEQUENCE IF EXISTS flowstore_claim_token")


class Migration(migrations.Migration):
    dependencies = [("flowstore", "0001_initial")]

    operations = [migrations.RunPython(create_token_source, drop_token_source)]
