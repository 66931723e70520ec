"""What the commands print, made safe for a terminal, and bad values told one line per error.

Ids, names, reasons and values come from users; printed raw, an ESC or a C1 CSI in one of them would drive
the operator's terminal (recolour, retitle, clear the screen, hide a line behind a CR). Every character a
terminal treats as a control (C0, DEL, C1, and the Unicode line and paragraph separators) is printed as its
Python escape (`\\x1b`, `\\r`, `\\u2028`), the form `repr` and the error messages already use.

`SafeOutput` is the one place a command's stdout and stderr go through (tables, blocks, `--json`, diagrams
and the `CommandError` line Django prints); it keeps newlines, the structure of multi-line output. A value
placed inside one line (a table cell, a field of `flow show`) is escaped whole with `escape`, newlines too.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.management.base import BaseCommand, OutputWrapper
from pydantic import ValidationError

from flowdeck.engine import errors

__all__ = [
    "table",
    "EscapingFormatter",
    "SafeOutput",
    "SafeOutputCommand",
    "escape",
    "escape_lines",
    "input_error_text",
    "short",
    "validation_lines",
]

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROLS_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def escape(text: str) -> str:
    """`text` on one line: every control character (newlines too) as its escape."""
    return _CONTROLS.sub(_escaped, text)


def escape_lines(text: str) -> str:
    """`text` with every control character but the newline as its escape."""
    return _CONTROLS_BUT_NEWLINE.sub(_escaped, text)


class SafeOutput(OutputWrapper):
    """A command's stdout or stderr that never writes a terminal control character (newlines pass)."""

    def write(self, msg: str = "", style_func: Any = None, ending: str | None = None) -> None:
        # escaped before Django's styling, so the colours Django adds on a terminal still work
        super().write(escape_lines(msg), style_func, ending)


class SafeOutputCommand(BaseCommand):
    """A command whose every output, the error line included, goes through `SafeOutput`."""

    def execute(self, *args: Any, **options: Any) -> Any:
        for name in ("stdout", "stderr"):
            given = options.pop(name, None)
            wrapper: OutputWrapper = getattr(self, name)
            safe = SafeOutput(given or wrapper._out)
            if name == "stderr":
                safe.style_func = wrapper.style_func
            setattr(self, name, safe)
        return super().execute(*args, **options)


class EscapingFormatter(logging.Formatter):
    """Log lines with the control characters escaped (a traceback keeps its lines)."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_lines(super().format(record))


# ------------------------------------------------------------------------------------------ bad values


def validation_lines(error: ValidationError, prefix: str = "") -> list[str]:
    """One `path: message` line per error (`order.items.0.qty: Input should be a valid integer`)."""
    lines = []
    for problem in error.errors(include_url=False, include_input=False):
        parts = [str(part) for part in problem["loc"]]
        path = ".".join([prefix, *parts] if prefix else parts)
        lines.append(escape(f"{path or '(value)'}: {problem['msg']}"))
    return lines


def input_error_text(error: errors.FlowInputError) -> str:
    """The engine's message, with pydantic's report (several lines each, and URLs) as one line per error."""
    message, cause = str(error), error.__cause__
    if not isinstance(cause, ValidationError):
        return message
    head = message.removesuffix(str(cause)).rstrip().removesuffix(":")
    return "\n  ".join([f"{head}:", *validation_lines(cause, error.name)])


def short(text: str, width: int = 80) -> str:
    """`text` on one line of at most `width` characters (an ellipsis where it was cut)."""
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Aligned columns; each cell on its one line (its control characters, newlines too, escaped)."""
    rows = [[escape("" if c is None else str(c)) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)
