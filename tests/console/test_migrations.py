"""The console's models and migrations agree, and the run permission reaches the existing operators."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("flowdeck_console", "0002_token_expiry_and_revocation")]
AFTER = [("flowdeck_console", "0003_grant_run_to_operators")]


@pytest.mark.django_db
def test_models_need_no_new_migration() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "flowdeck_console", check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit:
        pytest.fail(
            "console/models.py changed without a migration: run `python manage.py makemigrations "
            f"flowdeck_console` and commit the new file.\n{out.getvalue()}"
        )


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # as the other console tests
def test_operators_are_granted_the_run_permission() -> None:
    """Who held `operate_executions` before the upgrade (a user, or through a group) still starts and
    signals after it; a user without it becomes read-only."""
    _migrate(BEFORE)
    assert not Permission.objects.filter(codename="run_executions").exists()
    operate = Permission.objects.get(codename="operate_executions")
    users = get_user_model()
    olga = users.objects.create_user("olga")
    olga.user_permissions.add(operate)
    ops = Group.objects.create(name="ops")
    ops.permissions.add(operate)
    gus = users.objects.create_user("gus")
    gus.groups.add(ops)
    users.objects.create_user("victor")

    _migrate(AFTER)

    def perms(name: str) -> set[str]:
        return users.objects.get(username=name).get_all_permissions()

    both = {"flowdeck_console.operate_executions", "flowdeck_console.run_executions"}
    assert (perms("olga"), perms("gus"), perms("victor")) == (both, both, set())
    assert sorted(Group.objects.get(name="ops").permissions.values_list("codename", flat=True)) == [
        "operate_executions",
        "run_executions",
    ]
    _migrate([])  # back to the newest migrations, as every later test expects
