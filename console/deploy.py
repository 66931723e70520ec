"""Settings read from the environment for a deployment: the secret key, and typed `FLOWDECK_*` switches.

Used by `console.settings` while it loads, so it imports nothing of Django that needs settings.

The secret key is never a published fallback. It is `FLOWDECK_SECRET_KEY`; else, on a SQLite database, the
key the demo keeps beside its file (`<database>.secret-key`, mode 0600), so the operator CLI in a second
terminal signs what the demo's server signs; else, in the demo or with `FLOWDECK_DEBUG=1`, a fresh random
key (the demo then keeps it, see `keep_demo_key`); else the process refuses to start.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "SECRET_KEY_VARIABLE",
    "demo_key_file",
    "env_flag",
    "env_list",
    "env_number",
    "keep_demo_key",
    "load_settings_or_exit",
    "running_demo",
    "secret_key",
]

SECRET_KEY_VARIABLE = "FLOWDECK_SECRET_KEY"
KEY_FILE_SUFFIX = ".secret-key"

MISSING_KEY = (
    f"{SECRET_KEY_VARIABLE} is not set. Set it to a long random value, kept secret and the same for every "
    "web process (for example the output of: python -c 'import secrets; print(secrets.token_urlsafe(50))'). "
    "Only `manage.py demo` (and FLOWDECK_DEBUG=1) make a key of their own."
)


def running_demo(argv: Sequence[str]) -> bool:
    """Whether this process is `manage.py demo` (or `flowdeck demo`): the one command that may make a key."""
    return len(argv) > 1 and argv[1] == "demo"


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


def env_flag(environ: Mapping[str, str], name: str, default: bool = False) -> bool:
    """A `0`/`1` switch; anything else refuses to start, naming the variable."""
    value = environ.get(name, "").strip()
    if not value:
        return default
    if value not in ("0", "1"):
        raise ImproperlyConfigured(f"{name} must be 0 or 1 (got {value!r})")
    return value == "1"


def env_number(environ: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    """A whole number, at least `minimum`; anything else refuses to start, naming the variable."""
    value = environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < minimum:
        raise ImproperlyConfigured(f"{name} must be a whole number of at least {minimum} (got {value!r})")
    return int(value)


def env_list(environ: Mapping[str, str], name: str, default: str = "") -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [item.strip() for item in environ.get(name, default).split(",") if item.strip()]


def load_settings_or_exit() -> None:
    """Load the settings of a command-line process; a configuration it refuses (no secret key, a bad
    switch) is one line on stderr and exit code 2, not a traceback."""
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loading the settings module is the point
    except ImproperlyConfigured as error:
        sys.stderr.write(f"error: {error}\n")
        raise SystemExit(2) from None
