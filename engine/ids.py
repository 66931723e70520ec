"""The id rule: what an execution id or a workflow id may be, checked wherever an id enters.

One rule for every door (engine, API, console, CLI, flows modules), so an id that one of them accepted
never breaks another: ids end up in URLs, file-like paths, terminal output and HTML. An id is at most
`MAX_ID_LENGTH` characters, not empty, holds no control character (C0, DEL, C1), no line or paragraph
separator, no lone surrogate and no `/`, and is not `.` or `..`.
"""

from __future__ import annotations

import unicodedata

from flowdeck.engine import errors

__all__ = ["MAX_ID_LENGTH", "check_id", "id_problem"]

MAX_ID_LENGTH = 200

# Unicode categories no id may hold: controls, line/paragraph separators, surrogates (a lone one cannot be
# encoded as UTF-8, so no database or browser could round-trip it).
_REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})


def id_problem(value: object) -> str | None:
    """What is wrong with `value` as an id, in a few words; None when it keeps the rule."""
    if not isinstance(value, str):
        return "must be a string"
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"must be at most {MAX_ID_LENGTH} characters (got {len(value)})"
    if value in {".", ".."}:
        return "must not be '.' or '..'"
    for position, char in enumerate(value):
        if char == "/":
            return f"must not contain '/' (at position {position})"
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"must not contain the control character U+{ord(char):04X} (at position {position})"
    return None


def check_id(value: object, *, what: str = "execution id") -> str:
    """`value` when it keeps the id rule; otherwise FlowInvalidId naming `what` and the problem."""
    problem = id_problem(value)
    if problem is not None:
        raise errors.FlowInvalidId(what, value, problem)
    assert isinstance(value, str)
    return value
