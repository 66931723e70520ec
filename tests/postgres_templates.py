"""Migrated PostgreSQL databases by copy: the suite's live servers and store aliases start from a database
that `migrate` built once, rather than each migrating an empty one.

Running the migrations costs 2 to 5 s of a test process's time (19 of them, with the history's partitions);
`CREATE DATABASE … TEMPLATE` copies the result in 0.3 to 0.7 s. The suite makes a couple of dozen such
databases per run. What a copy holds is what `migrate` made for the same settings: the template is built by
`migrate` itself, under those settings, and named after them, the virtualenv, the migration files' contents
and the UTC day (migration 0018 makes the history's partitions from today on). Tests of `migrate` itself
(upgrades, the partition migration) keep migrating databases of their own.

Test processes share a template: the first to need it builds it under an advisory lock (under another name,
renamed when it is complete, so a process killed mid-build leaves nothing another would copy), the others
wait on the lock and copy it.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from tests.store.django_support import POSTGRES_SERVER

__all__ = ["create_migrated"]

ROOT = Path(__file__).resolve().parents[1]
MIGRATIONS = (
    "store/django/migrations",
    "console/migrations",
    "examples/fulfilment/migrations",
    "examples/shop/orders/migrations",
)
PREFIX = "flowdeck_tmpl_"
KEPT_DAYS = 2  # templates of older days are dropped when a new one is built


def create_migrated(name: str, settings: str, migrate: Callable[[str], None]) -> None:
    """Database `name` (dropped first if it exists), a copy of one migrated under `settings`.
    `migrate(url)` runs the migrations on the database at `url`, as the caller would have on `name`."""
    template = template_name(settings)
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (template,))
        try:
            if not _exists(conn, template):
                _build(conn, template, migrate)
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (template,))


def template_name(settings: str) -> str:
    """The template's name: the day, and a digest of the settings' name, the virtualenv (CI's two
    Python/Django pairs each have theirs) and every migration file this process's apps and the checkout
    hold (Django's own differ between its versions)."""
    digest = hashlib.sha256(f"{settings}\0{sys.prefix}".encode())
    for folder in sorted({*(ROOT / f for f in MIGRATIONS), *_installed_migrations()}):
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return f"{PREFIX}{_day(datetime.now(UTC))}_{digest.hexdigest()[:12]}"


def _installed_migrations() -> list[Path]:
    from django.apps import apps

    folders = (Path(app.path) / "migrations" for app in apps.get_app_configs())
    return [folder for folder in folders if folder.is_dir()]


def _day(instant: datetime) -> str:
    return instant.strftime("%Y%m%d")


def _exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def _build(conn: psycopg.Connection, template: str, migrate: Callable[[str], None]) -> None:
    _drop_old_days(conn)
    building = f"{template}_building"
    conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
    conn.execute(f'CREATE DATABASE "{building}"')
    migrate(f"{POSTGRES_SERVER}/{building}")
    # FORCE-free: the migration's process has ended, so nothing holds a connection the rename would refuse
    conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')


def _drop_old_days(conn: psycopg.Connection) -> None:
    """Templates of days before the last `KEPT_DAYS` (other checkouts' suites may use today's)."""
    oldest_kept = _day(datetime.now(UTC) - timedelta(days=KEPT_DAYS))
    rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (PREFIX + "%",)).fetchall()
    for (name,) in rows:
        day = name.removeprefix(PREFIX)[:8]
        if day.isdigit() and day < oldest_kept:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
