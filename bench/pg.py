"""PostgreSQL plumbing shared by every workload: server address, bench databases, commit counters."""

from __future__ import annotations

import os
import time

import psycopg

HOST = os.environ.get("FLOWDECK_BENCH_PGHOST", "127.0.0.1")
PORT = int(os.environ.get("FLOWDECK_BENCH_PGPORT", "5432"))
USER = os.environ.get("FLOWDECK_BENCH_PGUSER", "postgres")

# A suffix keeps concurrent runs apart (the smoke test uses its own databases).
SUFFIX = os.environ.get("FLOWDECK_BENCH_DB_SUFFIX", "")
FLOWDECK_DB = f"flowdeck_bench{SUFFIX}"
DBOS_DB = f"flowdeck_bench_dbos{SUFFIX}"
LIMITS_DB = f"flowdeck_bench_limits{SUFFIX}"
SEARCH_DB = f"flowdeck_bench_search{SUFFIX}"
WEB_DB = f"flowdeck_bench_web{SUFFIX}"


def url(database: str) -> str:
    return f"postgresql://{USER}@{HOST}:{PORT}/{database}"


def connect(database: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(host=HOST, port=PORT, user=USER, dbname=database, autocommit=True)


def reachable() -> bool:
    try:
        with connect() as conn:
            conn.execute("select 1")
        return True
    except psycopg.OperationalError:
        return False


def recreate(database: str) -> None:
    """A bench database holding nothing, so every run starts from nothing: created if missing, else emptied
    by `clear` (not dropped: DROP DATABASE forces a checkpoint, seconds on a busy server, 26 s seen)."""
    assert database.startswith("flowdeck_"), database
    if not exists(database):
        with connect() as conn:
            conn.execute(f'create database "{database}"')
        return
    clear(database)


def clear(database: str) -> None:
    """Empty a bench database as a fresh one is (every schema dropped, `public` made again), its other
    sessions ended first as DROP DATABASE ... WITH (FORCE) would: all without a forced checkpoint."""
    assert database.startswith("flowdeck_"), database
    with connect() as conn:
        conn.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity"
            " where datname = %s and pid <> pg_backend_pid()",
            (database,),
        )
    with connect(database) as conn, conn.transaction():
        schemas = [
            row[0]
            for row in conn.execute(
                "select nspname from pg_namespace where nspname <> 'information_schema'"
                " and nspname not like 'pg\\_%'"
            )
        ]
        for schema in schemas:
            conn.execute(f'drop schema "{schema}" cascade')
        conn.execute("create schema public")


def exists(database: str) -> bool:
    with connect() as conn:
        return (
            conn.execute("select 1 from pg_database where datname = %s", (database,)).fetchone() is not None
        )


def ensure(database: str) -> None:
    assert database.startswith("flowdeck_"), database
    if not exists(database):
        with connect() as conn:
            conn.execute(f'create database "{database}"')


def empty_tables(database: str, schema: str, like: str, keep: tuple[str, ...] = ()) -> None:
    """Truncate the matching tables: a clean slate without DROP DATABASE, whose forced checkpoint costs a
    second or more on a busy server."""
    with connect(database) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "select tablename from pg_tables where schemaname = %s and tablename like %s", (schema, like)
            )
            if row[0] not in keep
        ]
        if names:
            listed = ", ".join(f'"{schema}"."{name}"' for name in names)
            conn.execute(f"truncate {listed} restart identity cascade")


def drop(database: str) -> None:
    """Drop `database` (a checkpoint on this server: `clear` is the cheap way to start again). For what
    must go as a whole, such as a copy made with CREATE DATABASE ... TEMPLATE (W13's loaded history)."""
    assert database.startswith("flowdeck_"), database
    with connect() as conn:
        conn.execute(f'drop database if exists "{database}" with (force)')


def server_version() -> str:
    with connect() as conn:
        row = conn.execute("show server_version").fetchone()
    return str(row[0]) if row else "?"


def xact_commit(database: str) -> int:
    """The server's commit counter for one database.

    Backends flush their counters lazily (at most once a second, or when they exit), so callers read this
    after the measured processes have exited, and `settled_xact_commit` waits for the number to stop moving.
    """
    with connect() as conn:
        conn.execute("select pg_stat_clear_snapshot()")
        row = conn.execute(
            "select xact_commit from pg_stat_database where datname = %s", (database,)
        ).fetchone()
    return int(row[0]) if row else 0


def settled_xact_commit(database: str, quiet: float = 0.3, patience: float = 3.0) -> int:
    """`xact_commit` once two reads `quiet` seconds apart agree (the reads commit in another database)."""
    deadline = time.monotonic() + patience
    last = xact_commit(database)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = xact_commit(database)
        if now == last:
            return now
        last = now
    return last
