"""Deployment settings: no published secret key (a process without one refuses to start; the demo makes
and keeps its own), bad switches refused by name, and `check --deploy` clean with the README's production
settings. Each runs the real `manage.py` in a subprocess."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import stat
from pathlib import Path

import pytest

from tests.acceptance.support import ROOT, Result, environment
from tests.acceptance.support import manage as warm_manage


def manage(database_url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    """These tests are about start-up itself: every call pays it, as a plain subprocess."""
    return warm_manage(database_url, *args, env=env, cold=True)


README = (ROOT / "README.md").read_text()
KEY = "FLOWDECK_SECRET_KEY"


def _without_key(database_url: str, **extra: str) -> dict[str, str]:
    """This suite's environment less its key (and debug switch), plus `extra`."""
    env = environment(database_url)
    env.pop(KEY, None)
    env.pop("FLOWDECK_DEBUG", None)
    return {**env, **extra}


def test_without_a_secret_key_a_process_refuses_to_start_naming_the_variable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'flowdeck.sqlite3'}"

    refused = manage(url, "check", env=_without_key(url))

    assert refused.returncode == 2, refused.explain()
    assert refused.stdout == ""
    assert refused.stderr.startswith(f"error: {KEY} is not set. Set it to a long random value")
    assert len(refused.stderr.splitlines()) == 1  # one line, no traceback


def test_with_debug_on_a_process_makes_a_key_of_its_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'flowdeck.sqlite3'}"

    checked = manage(url, "check", env=_without_key(url, FLOWDECK_DEBUG="1"))

    assert checked.returncode == 0, checked.explain()
    # nothing kept: a debug key lives as long as its process (the database itself may be opened: Django 6.1's
    # checks ask SQLite whether it supports the activity record's JSON field)
    kept = [p.name for p in tmp_path.iterdir() if not p.name.startswith("flowdeck.sqlite3")]
    assert kept == []


@pytest.mark.slow
def test_the_demo_makes_a_key_keeps_it_beside_its_database_and_the_cli_uses_it(tmp_path: Path) -> None:
    database = tmp_path / "demo.sqlite3"
    url = f"sqlite:///{database}"

    seeded = manage(url, "demo", "--no-serve", "--database", str(database), env=_without_key(url))

    assert seeded.returncode == 0, seeded.explain()
    kept = tmp_path / "demo.sqlite3.secret-key"
    key = kept.read_text().strip()
    assert len(key) >= 50
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    # the operator CLI on the demo's database needs no variable; a second demo keeps the same key
    listed = manage(url, "flowdeck", "ls", env=_without_key(url))
    assert listed.returncode == 0, listed.explain()
    assert "demo-completed" in listed.stdout
    again = manage(url, "demo", "--no-serve", "--database", str(database), env=_without_key(url))
    assert again.returncode == 0, again.explain()
    assert kept.read_text().strip() == key


def test_a_key_from_the_environment_is_never_written_by_the_demo(tmp_path: Path) -> None:
    database = tmp_path / "demo.sqlite3"
    url = f"sqlite:///{database}"

    seeded = manage(url, "demo", "--no-serve", "--database", str(database))

    assert seeded.returncode == 0, seeded.explain()
    assert sorted(p.name for p in tmp_path.iterdir() if "secret" in p.name) == []


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("FLOWDECK_HSTS_SECONDS", "a year", "FLOWDECK_HSTS_SECONDS: must be a whole number of at least 0"),
        ("FLOWDECK_SECURE_COOKIES", "yes", "FLOWDECK_SECURE_COOKIES: must be 0 or 1 (got 'yes')"),
        (
            "FLOWDECK_LOGIN_FAILURE_LIMIT",
            "0",
            "FLOWDECK_LOGIN_FAILURE_LIMIT: must be a whole number of at least 1",
        ),
        ("FLOWDECK_DEBUG", "yes", "FLOWDECK_DEBUG: must be 0 or 1 (got 'yes')"),  # was: silently off
        (  # was: a traceback from the logging configuration
            "FLOWDECK_LOG_LEVEL",
            "LOUD",
            "FLOWDECK_LOG_LEVEL: 'LOUD' is not a log level: one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        (
            "FLOWDECK_CSRF_TRUSTED_ORIGINS",
            "flowdeck.example.com",
            "FLOWDECK_CSRF_TRUSTED_ORIGINS: 'flowdeck.example.com' is not an origin: write its scheme",
        ),
        (
            "FLOWDECK_EVENT_LOOP",
            "tokio",
            "FLOWDECK_EVENT_LOOP: 'tokio' is not an event loop: asyncio or uvloop",
        ),
    ],
)
def test_a_bad_switch_refuses_to_start_naming_it(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    url = f"sqlite:///{tmp_path / 'flowdeck.sqlite3'}"

    refused = manage(url, "check", env=environment(url, **{variable: value}))

    assert refused.returncode == 2, refused.explain()
    assert refused.stderr.startswith(f"error: {message}")
    assert len(refused.stderr.splitlines()) == 1, refused.explain()


def test_every_bad_switch_is_named_at_once_one_line_each(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'flowdeck.sqlite3'}"
    bad = {
        "FLOWDECK_SSL_REDIRECT": "yes",
        "FLOWDECK_HSTS_SECONDS": "-1",
        "FLOWDECK_LOGIN_COOLOFF_SECONDS": "x",
    }

    refused = manage(url, "check", env=environment(url, **bad))

    assert (refused.returncode, refused.stdout, refused.stderr.splitlines()) == (
        2,
        "",
        [
            "error: FLOWDECK_SSL_REDIRECT: must be 0 or 1 (got 'yes')",
            "error: FLOWDECK_HSTS_SECONDS: must be a whole number of at least 0 (got '-1')",
            "error: FLOWDECK_LOGIN_COOLOFF_SECONDS: must be a whole number of at least 1 (got 'x')",
        ],
    ), refused.explain()


def _production_exports() -> dict[str, str]:
    """The variables the README's "Running in production" block exports (the key's file stands for a key)."""
    section = README.split("## Running in production", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    exported: dict[str, str] = {}
    for line in block.splitlines():
        if line.startswith("export "):
            for word in shlex.split(line.split("#", 1)[0])[1:]:
                name, _, value = word.partition("=")
                exported[name] = value
    return exported


def test_check_deploy_is_clean_with_the_readme_s_production_settings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'flowdeck.sqlite3'}"
    exported = _production_exports()
    assert set(exported) >= {KEY, "FLOWDECK_SECURE_COOKIES", "FLOWDECK_SSL_REDIRECT", "FLOWDECK_HSTS_SECONDS"}
    assert re.fullmatch(r"\$\(cat .+\)", exported[KEY])
    production = {**exported, KEY: secrets.token_urlsafe(50)}
    production.pop("DATABASE_URL")  # the example server stands for this test's file

    checked = manage(url, "check", "--deploy", "--fail-level", "WARNING", env=_without_key(url, **production))
    # and without the README's switches, the same check fails: it is the switches that make it clean
    plain = manage(
        url, "check", "--deploy", "--fail-level", "WARNING", env=_without_key(url, **{KEY: production[KEY]})
    )

    assert checked.returncode == 0, checked.explain()
    assert "System check identified no issues" in checked.stdout
    assert plain.returncode == 1, plain.explain()
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= set(
        re.findall(r"security\.W\d+", plain.stderr)
    )


def test_the_environment_of_this_suite_has_its_own_key() -> None:
    # every process the suite starts inherits it (tests/settings.py); not the production example's
    assert os.environ[KEY].startswith("flowdeck-test-suite-key")
