"""The demo keeps the admin password it printed first, beside its SQLite file (mode 0600), so a saved one
goes on working across runs; `--new-password` (`new=True`) makes and keeps a new one."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from flowdeck.console import demo

pytestmark = pytest.mark.django_db


def _signs_in(password: str) -> bool:
    return bool(get_user_model().objects.get(username=demo.DEMO_USER).check_password(password))


def _hash() -> str:
    return str(get_user_model().objects.get(username=demo.DEMO_USER).password)


def test_the_first_password_is_kept_beside_the_database(tmp_path: Path) -> None:
    database = tmp_path / "demo.sqlite3"
    first, kept = demo.kept_admin(database)
    assert kept == tmp_path / "demo.sqlite3.admin-password"
    assert kept.read_text() == first + "\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    signed = _hash()

    again, _ = demo.kept_admin(database)

    assert again == first
    assert _hash() == signed  # not even re-hashed: the admin's sessions stay signed in
    assert _signs_in(first)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.sqlite3.admin-password"]  # no leftovers


def test_a_new_password_only_when_asked(tmp_path: Path) -> None:
    database = tmp_path / "demo.sqlite3"
    first, kept = demo.kept_admin(database)

    second, _ = demo.kept_admin(database, new=True)

    assert second != first
    assert kept.read_text() == second + "\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert not _signs_in(first)
    assert _signs_in(second)
    assert demo.kept_admin(database)[0] == second


def test_a_kept_password_outlives_its_user(tmp_path: Path) -> None:
    """A database made again (its users gone) beside a kept password: the admin gets that password."""
    database = tmp_path / "demo.sqlite3"
    first, _ = demo.kept_admin(database)
    get_user_model().objects.filter(username=demo.DEMO_USER).delete()

    assert demo.kept_admin(database)[0] == first
    assert _signs_in(first)
