# The executions list sorted by the latest change (`list_executions(order_by="updated")`), newest first.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0007_field_value_gin"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(fields=["-updated", "-serial"], name="fs_exec_updated"),
        ),
    ]
