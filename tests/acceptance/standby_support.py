"""What the tests on a private primary and standby (bench/standby.py) share: the pair as a fixture, the
database prepared on it (migrated, users seeded), a web process on it, and reads of it."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench import standby
from tests.acceptance import test_atomic_sigkill as atomic
from tests.acceptance.support import PYTHON, Background, manage, ok

SETTINGS = atomic.SETTINGS  # the atomic-ledger flow served beside the examples


@pytest.fixture
def pair() -> Iterator[standby.Pair]:
    try:
        with standby.running() as running:
            yield running
    except standby.StandbyMissing as missing:
        if os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{missing} and FLOWDECK_REQUIRE_POSTGRES=1")
        pytest.skip(str(missing))


def prepare(url: str, env: dict[str, str], executions: int, prefix: str = "ak") -> dict[str, str]:
    """Migrate, start `executions` atomic-ledger executions, seed the API tests' users: their credentials."""
    script = (
        "import json; from django.core.management import call_command; call_command('migrate', verbosity=0); "
        f"from tests.acceptance.atomic_flows import start_many; start_many({executions}, {prefix!r}); "
        "from tests.api.seed_users import seed; print(json.dumps(seed()))"
    )
    return dict(json.loads(ok(manage(url, "shell", "-c", script, env=env)).stdout.splitlines()[-1]))


def start(url: str, env: dict[str, str], count: int, prefix: str) -> None:
    script = f"from tests.acceptance.atomic_flows import start_many; start_many({count}, {prefix!r})"
    ok(manage(url, "shell", "-c", script, env=env))


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        return conn.execute(sql, params).fetchall()


def web(env: dict[str, str], folder: Path, port: int) -> Background:
    argv = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "flowdeck.console.asgi:application"]
    return Background("web", argv, env, folder)


def health(port: int, token: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/health", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def answers(port: int, token: str) -> bool:
    try:
        return health(port, token) == 200
    except OSError:
        return False


def page(port: int, path: str, session: str) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Cookie": f"sessionid={session}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def until(check: Callable[[], Any], seconds: float, what: str) -> None:
    """Wait for `check` to hold (polled), failing with `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds:g}s")
        time.sleep(0.05)
