"""Flowdeck as a guest in a host project (`tests/console/host/`: startproject's settings and middleware,
no Flowdeck middleware, its own admin, the console included under `/ops/`).

The host's pages carry none of the console's headers and its admin is Django's; the console's own URLs
carry them all, and its API keeps its JSON errors and limits; `check` has no warning of ours; `demo`
refuses to run there. Each runs in a process of its own on the host's settings (this suite's process is
on Flowdeck's own project), on a SQLite file of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowdeck.console import csp

ROOT = Path(__file__).resolve().parents[2]
HOST_SETTINGS = "tests.console.host.settings"
FLOWDECK_HEADERS = ("Content-Security-Policy", "Cache-Control")


def _host(*args: str, database: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": HOST_SETTINGS, "HOST_DATABASE": str(database)}
    env.pop("FLOWDECK_SECRET_KEY", None)  # the host has its own SECRET_KEY
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    done = _host("-m", "tests.console.host.probe", database=tmp_path_factory.mktemp("host") / "db.sqlite3")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("page", ["home", "admin login"])
def test_the_host_s_pages_carry_none_of_the_console_s_headers(answers: dict[str, Any], page: str) -> None:
    answer = answers[page]
    assert answer["status"] == 200
    assert "Content-Security-Policy" not in answer["headers"]


def test_the_host_s_admin_keeps_django_s_titles(answers: dict[str, Any]) -> None:
    assert answers["site_header"] == "Django administration"
    assert "<title>Log in | Django site admin</title>" in answers["admin login"]["body"]


@pytest.mark.parametrize(
    ("page", "status"),
    [
        ("console login", 200),
        ("console page", 200),
        ("console unstorable", 400),
        ("api anonymous", 401),
        ("api no route", 404),
        ("api nul", 400),
        ("api too large", 413),
    ],
)
def test_the_console_s_urls_carry_its_headers(answers: dict[str, Any], page: str, status: int) -> None:
    answer = answers[page]
    headers = answer["headers"]
    assert answer["status"] == status
    assert headers["Content-Security-Policy"].startswith("default-src 'self'; script-src 'self';")
    assert set(csp.CONSOLE_POLICY) == {
        part.split()[0] for part in headers["Content-Security-Policy"].split("; ")
    }
    assert (headers["X-Content-Type-Options"], headers["Referrer-Policy"]) == ("nosniff", "same-origin")
    assert headers["X-Frame-Options"] == "DENY"
    assert {"private", "no-store"} <= {part.strip() for part in headers["Cache-Control"].split(",")}


def test_an_anonymous_caller_goes_to_the_console_s_login_whatever_the_host_s_login_url(
    answers: dict[str, Any],
) -> None:
    answer = answers["console anonymous"]
    assert (answer["status"], answer["headers"]["Location"]) == (302, "/ops/login/?next=/ops/executions/")


def test_a_page_with_unstorable_text_is_the_console_s_styled_refusal(answers: dict[str, Any]) -> None:
    body = answers["console unstorable"]["body"]
    assert '<section class="card refused">' in body
    assert "Refused: q: must not contain a NUL character" in body


@pytest.mark.parametrize(
    ("page", "code"),
    [
        ("api anonymous", "unauthenticated"),
        ("api no route", "route_not_found"),
        ("api nul", "nul_character"),
        ("api too large", "body_too_large"),
    ],
)
def test_the_api_answers_its_json_errors_under_the_host(
    answers: dict[str, Any], page: str, code: str
) -> None:
    answer = answers[page]
    assert answer["headers"]["Content-Type"].startswith("application/json")
    assert json.loads(answer["body"])["code"] == code


def test_check_under_the_host_has_no_warning_of_flowdeck_s(tmp_path: Path) -> None:
    done = _host("-m", "django", "check", database=tmp_path / "db.sqlite3")
    assert done.returncode == 0, done.stderr
    assert "W005" not in done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_demo_refuses_to_run_in_a_host_project_and_records_nothing(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    done = _host("-m", "django", "flowdeck_demo", "--no-serve", database=database)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "demo runs only in Flowdeck's own project" in done.stderr
    assert "Traceback" not in done.stderr
    # nothing migrated, no user made (Django 6's start-up may open the file, which makes it, empty)
    assert not database.exists() or _tables(database) == []


def _tables(database: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(database)) as conn:
        return [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
