"""Refused settings: one line per problem, each naming its setting, and how a process stops on them.

A host's web process gets `SettingsRefused`, an `ImproperlyConfigured` whose message is those lines. A
management command (`check`, `migrate`, `flowdeck_workers`, any other) prints them on stderr and exits
with code 2, as a command does for bad input: no traceback, whichever command it was.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from types import FrameType
from typing import Any, NoReturn

import pydantic
from django.core.exceptions import ImproperlyConfigured

__all__ = ["SettingsRefused", "in_management_command", "problem_lines", "refuse"]


class SettingsRefused(ImproperlyConfigured):
    """Flowdeck's settings are refused: `problems` holds one line per problem, each naming its setting."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def problem_lines(error: pydantic.ValidationError, *prefix: str) -> list[str]:
    """One line per problem pydantic found: `SETTING: field: what is wrong (got VALUE)`; `prefix` goes
    before the error's own location (the setting a nested model was read from)."""
    return [_line(prefix, problem) for problem in error.errors()]


def _line(prefix: Iterable[str], problem: Mapping[str, Any]) -> str:
    where = ": ".join([*prefix, *(str(part) for part in problem["loc"])])
    # a setting is written as a list, which pydantic reads into a tuple
    message = str(problem["msg"]).removeprefix("Value error, ").replace("a valid tuple", "a list")
    # our own checks (value_error) quote the value they refuse; a missing key has none
    if problem["type"] in ("missing", "value_error"):
        return f"{where}: {message}" if where else message
    return f"{where}: {message} (got {_shown(problem.get('input'))})"


def _shown(value: object) -> str:
    text = repr(value)  # repr escapes control characters: a value cannot drive the operator's terminal
    return text if len(text) <= 60 else text[:57] + "..."


def in_management_command() -> bool:
    """Whether this process is being set up by `manage.py` (or `django-admin`, `python -m django`, the
    `flowdeck` script): Django's `ManagementUtility.execute` is on the stack. Django has no flag for it,
    and a host's manage.py is not ours to change; the web server's start-up (ASGI/WSGI) has no such frame."""
    from django.core.management import ManagementUtility

    target = ManagementUtility.execute.__code__
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is target:
            return True
        frame = frame.f_back
    return False


def refuse(refused: SettingsRefused) -> NoReturn:
    """Stop this process on refused settings: in a management command one line per problem on stderr and
    exit code 2; anywhere else (the web process, a test run) an ImproperlyConfigured saying them."""
    if not in_management_command():
        raise ImproperlyConfigured("Flowdeck's settings are refused:\n" + str(refused)) from None
    for problem in refused.problems:
        sys.stderr.write(f"error: {problem}\n")
    sys.stderr.flush()
    raise SystemExit(2)
