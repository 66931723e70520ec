"""A bad `FLOWDECK_*` setting in a host project (`tests/console/host/settings.py` plus the bad line): every
management command exits 2 with one line per problem, each naming its setting, and no traceback; the web
process gets an ImproperlyConfigured saying the same lines.

Each case runs in a process of its own, as a host runs `manage.py`: the settings are checked as Django
starts (the console's `ready()`), before any command. The cases take turns over four commands; one host with
several bad settings runs every kind of command (Django's, ours, the `flowdeck` script's).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowdeck.console import conf

ROOT = Path(__file__).resolve().parents[2]
FLOWDECK_SCRIPT = Path(sys.executable).parent / "flowdeck"
COMMANDS = (["check"], ["migrate"], ["flowdeck_workers"], ["flowdeck", "ls"])

# (the settings' lines, the one line each command must print); every setting of console.conf has a case
BAD = [
    (
        'FLOWDECK_FLOW_MODULES = "shop.flows"',
        "FLOWDECK_FLOW_MODULES: Input should be a list (got 'shop.flows')",
    ),
    (
        'FLOWDECK_FLOW_MODULES = ["shop flows"]',
        "FLOWDECK_FLOW_MODULES: 0: 'shop flows' is not a dotted module name (like 'shop.flows')",
    ),
    ("FLOWDECK_WORKERS = 0", "FLOWDECK_WORKERS: Input should be greater than or equal to 1 (got 0)"),
    ("FLOWDECK_WORKERS = True", "FLOWDECK_WORKERS: must be a number, not True"),
    (
        'FLOWDECK_LEASE_SECONDS = "half a minute"',
        "FLOWDECK_LEASE_SECONDS: Input should be a valid number, unable to parse string as a number "
        "(got 'half a minute')",
    ),
    (
        "FLOWDECK_LEASE_SECONDS = 5",
        "FLOWDECK_RENEW_EVERY_SECONDS (10) must be shorter than FLOWDECK_LEASE_SECONDS (5), "
        "or claims lapse between renewals",
    ),
    (
        "FLOWDECK_RENEW_EVERY_SECONDS = -1",
        "FLOWDECK_RENEW_EVERY_SECONDS: Input should be greater than 0 (got -1)",
    ),
    (
        "FLOWDECK_BATCH_SIZE = 2.5",
        "FLOWDECK_BATCH_SIZE: Input should be a valid integer, got a number with a fractional part (got 2.5)",
    ),
    (
        'FLOWDECK_POLL_TIMEOUT_SECONDS = float("inf")',
        "FLOWDECK_POLL_TIMEOUT_SECONDS: Input should be less than or equal to 31536000 (got inf)",
    ),
    (
        'FLOWDECK_DATABASE_ALIAS = "flows"',
        "FLOWDECK_DATABASE_ALIAS: 'flows' is not in DATABASES (it has 'default')",
    ),
    (
        "FLOWDECK_TRANSACTION_POOLER = 1",
        "FLOWDECK_TRANSACTION_POOLER: Input should be a valid boolean (got 1)",
    ),
    (
        "FLOWDECK_TRANSACTION_POOLER = True",
        "FLOWDECK_TRANSACTION_POOLER is set: FLOWDECK_LISTEN_DATABASE_ALIAS must name a database alias that "
        "keeps a session for the LISTEN connection (direct to PostgreSQL, or a session-mode pool entry; "
        "docs/pooling.md)",
    ),
    (
        'FLOWDECK_WRITES_DATABASE_ALIAS = "writers"',
        "FLOWDECK_WRITES_DATABASE_ALIAS: 'writers' is not in DATABASES (it has 'default')",
    ),
    (
        'FLOWDECK_LISTEN_DATABASE_ALIAS = "direct"',
        "FLOWDECK_LISTEN_DATABASE_ALIAS: 'direct' is not in DATABASES (it has 'default')",
    ),
    (
        'FLOWDECK_READ_REPLICA_ALIAS = "replica"',
        "FLOWDECK_READ_REPLICA_ALIAS: 'replica' is not in DATABASES (it has 'default')",
    ),
    ("FLOWDECK_HEARTBEAT_SECONDS = 0", "FLOWDECK_HEARTBEAT_SECONDS: Input should be greater than 0 (got 0)"),
    (
        "FLOWDECK_DEMO_STOP_SECONDS = 10**9",
        "FLOWDECK_DEMO_STOP_SECONDS: Input should be less than or equal to 31536000 (got 1000000000)",
    ),
    (
        "FLOWDECK_DEMO_PREVIOUS_FLOWS = 3",
        "FLOWDECK_DEMO_PREVIOUS_FLOWS: Input should be a valid string (got 3)",
    ),
    (
        'FLOWDECK_RETENTION = {"older_than": "30"}',
        "FLOWDECK_RETENTION: older_than: '30' is not a duration: give a whole number and a unit "
        "(90m, 12h, 30d)",
    ),
    ('FLOWDECK_CSP = {"img-src": "self"}', "FLOWDECK_CSP: img-src: Input should be a list (got 'self')"),
    (
        'FLOWDECK_CSP = {"img-src": ["\'self\'; script-src *"]}',
        "FLOWDECK_CSP: img-src: 0: \"'self'; script-src *\" is not one CSP source (one word, no ';' or ',')",
    ),
    (
        'FLOWDECK_RATE_LIMITS = {"carrier-api": {"count": 50, "per": "fortnight"}}',
        "FLOWDECK_RATE_LIMITS: RateLimit: per must be one of second, minute, hour, day or a timedelta, got "
        "'fortnight'",
    ),
    ("FLOWDECK_WORKER = 4", "FLOWDECK_WORKER: not a Flowdeck setting (did you mean FLOWDECK_WORKERS?)"),
]


def _host(tmp_path: Path, lines: str, argv: list[str], **more: str) -> subprocess.CompletedProcess[str]:
    """`argv` run in a host project whose settings are the test host's plus `lines` (`more`: variables)."""
    (tmp_path / "bad_settings.py").write_text(f"from tests.console.host.settings import *  # noqa\n{lines}\n")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bad_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "HOST_DATABASE": str(tmp_path / "db.sqlite3"),
        **more,
    }
    env.pop("FLOWDECK_SECRET_KEY", None)  # the host has its own SECRET_KEY
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_setting_has_a_bad_case() -> None:
    named = {line.split(" = ")[0] for line, _ in BAD}
    assert set(conf._Declared.model_fields) <= named


@pytest.mark.parametrize(
    ("case", "command"), [(case, COMMANDS[i % len(COMMANDS)]) for i, case in enumerate(BAD)]
)
def test_a_bad_setting_is_one_line_and_exit_2(
    tmp_path: Path, case: tuple[str, str], command: list[str]
) -> None:
    lines, said = case
    done = _host(tmp_path, lines, [sys.executable, "-m", "django", *command])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"error: {said}\n")
    assert not (tmp_path / "db.sqlite3").exists()  # refused before anything ran


def test_the_engine_s_event_loop_variable_is_checked_with_them(tmp_path: Path) -> None:
    done = _host(tmp_path, "", [sys.executable, "-m", "django", "check"], FLOWDECK_EVENT_LOOP="tokio")
    said = "error: FLOWDECK_EVENT_LOOP: 'tokio' is not an event loop: asyncio or uvloop\n"
    assert (done.returncode, done.stdout, done.stderr) == (2, "", said)


SEVERAL = """
FLOWDECK_WORKERS = "many"
FLOWDECK_RETENTION = {"older_than": "30", "statuses": ["stopped"]}
FLOWDECK_LOG_LEVEL = "DEBUG"
"""
KNOWN = conf._Declared.model_fields
SEVERAL_SAID = [
    # an environment variable of Flowdeck's own project does nothing in a host's settings: refused
    f"error: FLOWDECK_LOG_LEVEL: not a Flowdeck setting (Flowdeck's are {', '.join(KNOWN)})",
    "error: FLOWDECK_WORKERS: Input should be a valid integer, unable to parse string as an integer "
    "(got 'many')",
    "error: FLOWDECK_RETENTION: older_than: '30' is not a duration: give a whole number and a unit "
    "(90m, 12h, 30d)",
    "error: FLOWDECK_RETENTION: statuses: only ended executions are purged: 'stopped' is not one of "
    "completed, failed, cancelled",
]


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "django", "check"],
        ["-m", "django", "migrate"],
        ["-m", "django", "help"],
        ["-m", "django", "shell", "-c", "print('ran')"],
        ["-m", "django", "runserver", "--noreload", "127.0.0.1:0"],
        ["-m", "django", "flowdeck_upgrade"],
        ["-m", "django", "flowdeck_workers"],
        ["-m", "django", "flowdeck", "ls"],
        ["-m", "django", "flowdeck_demo"],
        ["flowdeck", "workers"],
        ["flowdeck", "demo"],
        ["flowdeck", "ls"],
    ],
)
def test_every_command_says_every_problem_one_line_each(tmp_path: Path, argv: list[str]) -> None:
    program = [str(FLOWDECK_SCRIPT)] if argv[0] == "flowdeck" else [sys.executable]
    done = _host(tmp_path, SEVERAL, [*program, *argv[argv[0] == "flowdeck" :]])
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", SEVERAL_SAID)


def test_the_web_process_gets_an_improperly_configured_saying_every_problem(tmp_path: Path) -> None:
    start = "from django.core.asgi import get_asgi_application; get_asgi_application()"
    done = _host(tmp_path, SEVERAL, [sys.executable, "-c", start])
    assert done.returncode == 1
    said = done.stderr.splitlines()
    at = said.index("django.core.exceptions.ImproperlyConfigured: Flowdeck's settings are refused:")
    assert said[at + 1 :] == [line.removeprefix("error: ") for line in SEVERAL_SAID]
