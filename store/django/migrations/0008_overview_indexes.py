"""The overview's indexes (issue 14): each of its counts an index-only scan (see store.django.models, and
tests/store/test_overview_plan.py, which EXPLAINs the counts)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0007_field_value_gin"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(fields=["flow_id", "status_kind"], name="fs_exec_flow_kind"),
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("status_kind", "failed")),
                fields=["flow_id", "failure_kind"],
                name="fs_exec_failed_flow_kind",
            ),
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("status_kind", "stopped")),
                fields=["flow_id", "stop_code"],
                name="fs_exec_stopped_flow_code",
            ),
        ),
        migrations.AddIndex(
            model_name="wait",
            index=models.Index(
                condition=models.Q(("kind", "at"), ("path__contains", "#retry")),
                fields=["execution"],
                name="fs_wait_retry",
            ),
        ),
    ]
