"""Flowdeck as the bench runs it: Django configured at runtime for a bench database, and the Django store.

`DATABASE_URL` is what `console.settings` reads, so the bench sets it before Django starts; the settings
module is `bench.settings` (the project's, keeping only the store's app).
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

from bench import pg


def sqlite_path(name: str = "flowdeck") -> Path:
    folder = Path(tempfile.gettempdir()) / f"flowdeck-bench{pg.SUFFIX}"
    folder.mkdir(exist_ok=True)
    return folder / f"{name}.sqlite"


def database_url(backend: str, database: str = pg.FLOWDECK_DB) -> str:
    if backend == "postgres":
        return pg.url(database)
    return f"sqlite:///{sqlite_path(database)}"


def start_django(backend: str, database: str = pg.FLOWDECK_DB) -> None:
    """Point Django at the bench database and set it up (once per process)."""
    os.environ["DATABASE_URL"] = database_url(backend, database)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    os.environ.setdefault("FLOWDECK_LOG_LEVEL", "WARNING")
    # The store runs the ORM from worker threads beside the event loop; Django's guard is for views.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    import django

    django.setup()


def reset_database(backend: str, database: str = pg.FLOWDECK_DB) -> None:
    """The bench database exists (it is emptied after `migrate`, which is cheap when nothing is new)."""
    if backend == "postgres":
        pg.ensure(database)


# The claim-token source (seeded by a migration; tokens must keep rising, never restart).
KEEP = ("flowstore_token_counter",)


def migrate() -> None:
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0, interactive=False)
    if connection.vendor == "postgresql":
        pg.empty_tables(connection.settings_dict["NAME"], "public", "flowstore_%", keep=KEEP)
        return
    with connection.cursor() as cursor:
        cursor.execute("select name from sqlite_master where type = 'table' and name like 'flowstore_%'")
        tables = [row[0] for row in cursor.fetchall() if row[0] not in KEEP]
        cursor.execute("PRAGMA foreign_keys = OFF")
        for table in tables:
            cursor.execute(f'DELETE FROM "{table}"')
        cursor.execute("PRAGMA foreign_keys = ON")


def fresh_database(backend: str, database: str) -> None:
    """A fresh, migrated bench database, with Django started on it in this process.

    The migration's connection is closed again, so a coordinator that measures commits holds no session
    with unflushed counters."""
    from django.db import connections

    reset_database(backend, database)
    start_django(backend, database)
    migrate()
    connections.close_all()


def store_class() -> Any:
    """The Django store, wherever its module settles (`flowdeck.store.django` or a submodule of it)."""
    for module_name in (
        "flowdeck.store.django",
        "flowdeck.store.django.store",
        "flowdeck.store.django.backend",
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found = getattr(module, "DjangoStore", None)
        if found is not None:
            return found
    raise ImportError("no DjangoStore in flowdeck.store.django yet")


def make_store() -> Any:
    """The store on the bench database; behind a transaction-mode pooler when the settings say so (W19's
    pooled arm: `FLOWDECK_TRANSACTION_POOLER=1` in the workers' environment, bench/pooled_w1.py)."""
    from django.conf import settings

    if not getattr(settings, "FLOWDECK_TRANSACTION_POOLER", False):
        return store_class()(using="default")
    from flowdeck.store.django.pooling import Pooling

    pooling = Pooling(
        transaction=True,
        listen_using=settings.FLOWDECK_LISTEN_DATABASE_ALIAS,
        writes_using=settings.FLOWDECK_WRITES_DATABASE_ALIAS,
    )
    return store_class()(using="default", pooling=pooling)
