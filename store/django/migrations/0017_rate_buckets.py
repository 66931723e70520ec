"""Rate limits' buckets (`store.rate_limits`): a new table, so Django's CreateModel is safe on SQLite (no
existing table is rebuilt, no trigger lost). Numbered 0017: 0016 is taken by the concurrency limits built
beside it; the lead renumbers on merging."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0016_execution_concurrency"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateBucket",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200)),
                ("key", models.CharField(blank=True, max_length=200)),
                ("tat", models.BigIntegerField(help_text="theoretical arrival time, µs since the epoch")),
                ("taken", models.BigIntegerField(default=0, help_text="tokens taken at once")),
                ("reserved", models.BigIntegerField(default=0, help_text="tokens reserved for a later slot")),
                (
                    "window_start",
                    models.BigIntegerField(help_text="the latest window of slot time, µs since the epoch"),
                ),
                ("window_slots", models.BigIntegerField(default=0)),
                ("previous_slots", models.BigIntegerField(default=0)),
            ],
            options={
                "db_table": "flowstore_rate_bucket",
                "constraints": [models.UniqueConstraint(fields=("name", "key"), name="fs_rate_bucket_key")],
            },
        ),
    ]
