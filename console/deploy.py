"""Settings read from the environment for a deployment: the secret key, and typed `FLOWDECK_*` switches
(`Environment`, checked at once: every bad variable is one line of the refusal).

Used by `flowdeck.console.settings` while it loads, so it imports nothing of Django that needs settings.

The secret key is never a published fallback. It is `FLOWDECK_SECRET_KEY`; else, on a SQLite database, the
key the demo keeps beside its file (`<database>.secret-key`, mode 0600), so the operator CLI in a second
terminal signs what the demo's server signs; else, in the demo or with `FLOWDECK_DEBUG=1`, a fresh random
key (the demo then keeps it, see `keep_demo_key`); else the process refuses to start.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated

import pydantic
from django.core.exceptions import ImproperlyConfigured

from flowdeck.console import setting_errors

__all__ = [
    "SECRET_KEY_VARIABLE",
    "Environment",
    "demo_key_file",
    "environment",
    "event_loop_problems",
    "keep_demo_key",
    "load_settings_or_exit",
    "running_demo",
    "secret_key",
]

SECRET_KEY_VARIABLE = "FLOWDECK_SECRET_KEY"
DEFAULT_HOSTS = ("127.0.0.1", "localhost", "testserver")
KEY_FILE_SUFFIX = ".secret-key"

MISSING_KEY = (
    f"{SECRET_KEY_VARIABLE} is not set. Set it to a long random value, kept secret and the same for every "
    "web process (for example the output of: python -c 'import secrets; print(secrets.token_urlsafe(50))'). "
    "Only `manage.py demo` (and FLOWDECK_DEBUG=1) make a key of their own."
)


def running_demo(argv: Sequence[str]) -> bool:
    """Whether this process is `manage.py demo` (or `flowdeck demo`): the one command that may make a key."""
    return len(argv) > 1 and argv[1] in ("demo", "flowdeck_demo")


def demo_key_file(database_url: str) -> Path | None:
    """Where the demo keeps its key for a SQLite database URL (beside the file); None for other databases."""
    prefix = "sqlite:///"
    if not database_url.startswith(prefix) or database_url == prefix + ":memory:":
        return None
    database = Path(database_url[len(prefix) :])
    return database.with_name(database.name + KEY_FILE_SUFFIX)


def secret_key(environ: Mapping[str, str], *, debug: bool, database_url: str, argv: Sequence[str]) -> str:
    """The process's secret key (see the module's docstring); ImproperlyConfigured when there is none."""
    given = environ.get(SECRET_KEY_VARIABLE, "").strip()
    if given:
        return given
    kept = demo_key_file(database_url)
    if kept is not None and kept.is_file():
        text = kept.read_text(encoding="utf-8").strip()
        if text:
            return text
    if debug or running_demo(argv):
        return secrets.token_urlsafe(50)
    raise ImproperlyConfigured(MISSING_KEY)


def keep_demo_key(database: Path, key: str) -> Path:
    """Write the demo's key beside its SQLite file, readable by its owner only, unless one is there.

    Answers the file. A key already kept is left as it is (it is the one this process read)."""
    path = database.with_name(database.name + KEY_FILE_SUFFIX)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(key + "\n")
    return path


def _flag(value: str) -> bool:
    if value not in ("0", "1"):
        raise ValueError(f"must be 0 or 1 (got {value!r})")
    return value == "1"


def _whole(minimum: int) -> Callable[[str], int]:
    def check(value: str) -> int:
        if not value.isdigit() or int(value) < minimum:
            raise ValueError(f"must be a whole number of at least {minimum} (got {value[:40]!r})")
        return int(value)

    return check


def _names(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _origins(value: str) -> tuple[str, ...]:
    wrong = [origin for origin in _names(value) if not origin.startswith(("http://", "https://"))]
    if wrong:
        raise ValueError(
            f"{wrong[0][:60]!r} is not an origin: write its scheme (https://flowdeck.example.com)"
        )
    return _names(value)


def _level(value: str) -> str:
    if value.upper() not in LOG_LEVELS:
        raise ValueError(f"{value[:40]!r} is not a log level: one of {', '.join(LOG_LEVELS)}")
    return value.upper()


def _loop(value: str) -> str:
    if value.lower() not in ("asyncio", "uvloop"):
        raise ValueError(f"{value[:40]!r} is not an event loop: asyncio or uvloop")
    return value.lower()


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
Flag = Annotated[bool, pydantic.BeforeValidator(_flag)]


class Environment(pydantic.BaseModel):
    """The `FLOWDECK_*` variables of Flowdeck's own project (`console.settings`), each checked; a field is
    its variable's name, a blank variable is unset. `FLOWDECK_EVENT_LOOP` is read by the engine
    (`flowdeck.engine.event_loop`) in any project, and checked with the Django settings too."""

    model_config = pydantic.ConfigDict(frozen=True)

    FLOWDECK_DEBUG: Flag = False
    FLOWDECK_ALLOWED_HOSTS: Annotated[tuple[str, ...], pydantic.BeforeValidator(_names)] = DEFAULT_HOSTS
    FLOWDECK_LOG_LEVEL: Annotated[str | None, pydantic.BeforeValidator(_level)] = None
    FLOWDECK_SECURE_COOKIES: Flag = False
    FLOWDECK_SSL_REDIRECT: Flag = False
    FLOWDECK_HSTS_SECONDS: Annotated[int, pydantic.BeforeValidator(_whole(0))] = 0
    FLOWDECK_HSTS_INCLUDE_SUBDOMAINS: Flag = True
    FLOWDECK_HSTS_PRELOAD: Flag = False
    FLOWDECK_TLS_PROXY: Flag = False
    FLOWDECK_CSRF_TRUSTED_ORIGINS: Annotated[tuple[str, ...], pydantic.BeforeValidator(_origins)] = ()
    FLOWDECK_LOGIN_FAILURE_LIMIT: Annotated[int, pydantic.BeforeValidator(_whole(1))] = 5
    FLOWDECK_LOGIN_COOLOFF_SECONDS: Annotated[int, pydantic.BeforeValidator(_whole(1))] = 900
    FLOWDECK_EVENT_LOOP: Annotated[str | None, pydantic.BeforeValidator(_loop)] = None
    FLOWDECK_TRANSACTION_POOLER: Flag = False
    FLOWDECK_LISTEN_DATABASE_URL: str | None = None
    FLOWDECK_WRITES_DATABASE_URL: str | None = None
    FLOWDECK_READ_REPLICA_DATABASE_URL: str | None = None


def environment(environ: Mapping[str, str]) -> Environment:
    """The deployment's variables, checked at once: SettingsRefused (an ImproperlyConfigured) lists every
    bad one, a line each, so an operator fixes them in one go rather than one per restart."""
    names = Environment.model_fields
    given = {name: environ[name].strip() for name in names if environ.get(name, "").strip()}
    try:
        return Environment.model_validate(given)
    except pydantic.ValidationError as error:
        raise setting_errors.SettingsRefused(setting_errors.problem_lines(error)) from None


def event_loop_problems(environ: Mapping[str, str]) -> list[str]:
    """`FLOWDECK_EVENT_LOOP` checked alone: the one variable the engine reads in every project."""
    value = environ.get("FLOWDECK_EVENT_LOOP", "").strip()
    try:
        if value:
            _loop(value)
    except ValueError as error:
        return [f"FLOWDECK_EVENT_LOOP: {error}"]
    return []


def load_settings_or_exit() -> None:
    """Load the settings of a command-line process; a configuration it refuses (no secret key, bad
    switches) is one line per problem on stderr and exit code 2, not a traceback."""
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loading the settings module is the point
    except ImproperlyConfigured as error:
        for line in str(error).splitlines():
            sys.stderr.write(f"error: {line}\n")
        raise SystemExit(2) from None
