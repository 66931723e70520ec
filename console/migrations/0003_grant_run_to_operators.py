"""Starting and signalling now need `flowdeck_console.run_executions`; every user and group holding
`flowdeck_console.operate_executions` is granted it, so existing operators keep every power they had.

Users with neither permission become read-only (that is the change). Reversing removes the new
permission from everyone.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import migrations

RUN = ("run_executions", "Can start executions and signal their inputs")


def grant(apps: Any, schema_editor: Any) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    permissions = apps.get_model("auth", "Permission")
    alias = schema_editor.connection.alias
    holder, _ = content_types.objects.using(alias).get_or_create(
        app_label="flowdeck_console", model="operations"
    )
    # post_migrate creates permissions only after every migration ran: make this one now
    run, _ = permissions.objects.using(alias).get_or_create(
        content_type=holder, codename=RUN[0], defaults={"name": RUN[1]}
    )
    operate = (
        permissions.objects.using(alias).filter(content_type=holder, codename="operate_executions").first()
    )
    if operate is None:  # a fresh database: nobody holds anything yet
        return
    users = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    for user in users.objects.using(alias).filter(user_permissions=operate):
        user.user_permissions.add(run)
    for group in apps.get_model("auth", "Group").objects.using(alias).filter(permissions=operate):
        group.permissions.add(run)


def revoke(apps: Any, schema_editor: Any) -> None:
    permissions = apps.get_model("auth", "Permission")
    alias = schema_editor.connection.alias
    permissions.objects.using(alias).filter(
        content_type__app_label="flowdeck_console", codename=RUN[0]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("flowdeck_console", "0002_token_expiry_and_revocation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
