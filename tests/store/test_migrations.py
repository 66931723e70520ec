"""The models and the committed migrations agree (procrastinate's guard)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tests.store.django_support import database_access

__all__ = ["database_access"]


def test_models_need_no_new_migration(database_access: None) -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "flowstore", check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit:
        pytest.fail(
            "store/django/models.py changed without a migration: run `python manage.py makemigrations "
            f"flowstore` and commit the new file.\n{out.getvalue()}"
        )
