"""A live Flowdeck server on PostgreSQL for the API tests: daphne serving the project, workers running
the engine, both in subprocesses on one test database of this session's own.

The test process never opens that database: users and tokens are made by `tests.api.seed_users` in a
subprocess, and everything else goes over HTTP, as a client would.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.acceptance.support import warm_manage
from tests.api.client import ApiClient, Live
from tests.postgres_templates import create_migrated
from tests.store.django_support import POSTGRES_SERVER, _process_alive, require_postgres

ROOT = Path(__file__).resolve().parents[2]
DB_PREFIX = "flowdeck_test_api_"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _create_database(name: str) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        _drop_stale(conn)
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_stale(conn: psycopg.Connection) -> None:
    """The databases of test processes that are gone (killed before their teardown)."""
    for (stale,) in conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s", (DB_PREFIX + "%",)
    ).fetchall():
        if not _process_alive(stale.removeprefix(DB_PREFIX)):
            conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')


def migrated_database(name: str, env: dict[str, str]) -> None:
    """Database `name` as `manage.py migrate` leaves it under `env`'s settings (a copy of the suite's
    migrated template: tests/postgres_templates.py)."""
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        _drop_stale(conn)

    def migrate(url: str) -> None:
        _run({**env, "DATABASE_URL": url}, "manage.py", "migrate", "--verbosity", "0")

    create_migrated(name, env["DJANGO_SETTINGS_MODULE"], migrate)


def _drop_database(name: str) -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(env: dict[str, str], *args: str) -> str:
    """`python ARGS` to its end (`manage.py` forked from a warm parent: tests/acceptance/warm_manage.py)."""
    if args[0] == "manage.py":
        code, out, err = warm_manage(env, args[1:], 120)
    else:
        argv = [sys.executable, *args]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        code, out, err = done.returncode, done.stdout, done.stderr
    if code != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out}\n{err}")
    return out


def _wait_until_up(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the server did not come up:\n{log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The server's address and the callers' credentials; torn down with the session."""
    with serve(tmp_path_factory) as server:
        yield server


@contextlib.contextmanager
def serve(tmp_path_factory: pytest.TempPathFactory, label: str = "") -> Iterator[Live]:
    """A live server (daphne and workers) on a database of its own; `label` names a second one a module
    needs for itself (one whose state it breaks)."""
    require_postgres()
    name = f"{DB_PREFIX}{os.getpid()}" + (f"_{label}" if label else "")
    logs = tmp_path_factory.mktemp(f"live-api{label}")
    env = server_environment(name, "tests.api.settings")
    with serving(name, env, logs) as (base, credentials):
        yield Live(
            base=base,
            credentials=credentials,
            server_log=logs / "server.log",
            workers_log=logs / "workers.log",
            run=lambda *args: _run(env, *args),
            database=name,
        )


def server_environment(database: str, settings: str, **more: str) -> dict[str, str]:
    """A live server's environment: its PostgreSQL database and its settings module."""
    return {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{database}",
        "DJANGO_SETTINGS_MODULE": settings,
        "PYTHONPATH": str(ROOT),
        "FLOWDECK_LOG_LEVEL": "WARNING",
        **more,
    }


@contextlib.contextmanager
def serving(database: str, env: dict[str, str], logs: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """Daphne and the workers (`tests.api.workers`) of `env` on `database`, migrated and its users seeded;
    yields the server's address and the users' credentials, logs in `logs` (server.log, workers.log); the
    processes stopped and the database dropped afterwards."""
    migrated_database(database, env)
    credentials = json.loads(_run(env, "-m", "tests.api.seed_users"))
    port = _free_port()
    server_log = logs / "server.log"
    with server_log.open("wb") as server_out, (logs / "workers.log").open("wb") as workers_out:
        daphne = ["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "flowdeck.console.asgi:application"]
        server = subprocess.Popen(
            [sys.executable, *daphne], cwd=ROOT, env=env, stdout=server_out, stderr=subprocess.STDOUT
        )
        workers = subprocess.Popen(
            [sys.executable, "-m", "tests.api.workers"],
            cwd=ROOT,
            env=env,
            stdout=workers_out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_up(port, server, server_log)
        yield f"http://127.0.0.1:{port}", credentials
    finally:
        _stop(workers)
        _stop(server)
        _drop_database(database)


@pytest.fixture
def operator(live: Live) -> ApiClient:
    """A caller with a token, the operator permission and the run permission."""
    return ApiClient(live.base, token=live.credentials["operator_token"])


@pytest.fixture
def runner(live: Live) -> ApiClient:
    """A caller with a token and `console.run_executions` only (starts and signals, no operator verbs)."""
    return ApiClient(live.base, token=live.credentials["runner_token"])


@pytest.fixture
def viewer(live: Live) -> ApiClient:
    """A caller with a token and no permission: reads everything, changes nothing."""
    return ApiClient(live.base, token=live.credentials["viewer_token"])


@pytest.fixture
def anonymous(live: Live) -> ApiClient:
    return ApiClient(live.base)
