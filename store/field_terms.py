"""Search by a recorded value: the `field:<name>.<json.path>=<value>` term, its parsing, and its meaning.

`<name>` is a recorded field's durable key (an input's name, a step's output path); the segments after it
walk into the field's JSON value: a bare run of digits indexes an array, any other segment names an object
key (double-quote a segment to hold dots, `=`, spaces or digits meant as a key: `"0"`). The value is JSON
when it reads as a number, `true`, `false` or `null`; otherwise it is the text itself; a double-quoted
value is a JSON string (so `"1"` is the text 1, and quotes allow spaces). The match is exact and typed: the
number 1 equals 1.0 but not the text "1", and a missing path matches nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from store.fields import FieldData
from store.filters import FilterParseError

__all__ = [
    "PREFIX",
    "TERM_PATTERN",
    "FieldMatch",
    "JsonScalar",
    "field_matches",
    "parse_field_term",
    "split_terms",
]

PREFIX = "field:"
JsonScalar: TypeAlias = str | int | float | bool | None

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS: dict[str, JsonScalar] = {"true": True, "false": False, "null": None}
# The grammar, written once: the parser reads with these pieces, and the REST document states TERM_PATTERN
# (so what it calls valid is exactly what is accepted). A quoted key holds no quote, backslash or control
# character (SQLite's JSON paths cannot address those); a quoted value escapes `"` and `\` alone.
_BARE_KEY = r'[^."=\\ \x00-\x1f]+'
_QUOTED_KEY = r'"[^"\\\x00-\x1f]+"'
_QUOTED_VALUE = r'"(?:[^"\\\x00-\x1f]|\\["\\])*"'
_BARE_VALUE = r'[^"\\\[{\x00][^"\\\x00]*'
_SEGMENT = f"(?:{_BARE_KEY}|{_QUOTED_KEY})"
TERM_PATTERN = f"^field:{_SEGMENT}(?:\\.{_SEGMENT})*=(?:{_QUOTED_VALUE}|{_BARE_VALUE})$"
_KEY = re.compile(f"{_BARE_KEY}|{_QUOTED_KEY}")
_QUOTED = re.compile(_QUOTED_VALUE)
_ESCAPE = re.compile(r'\\(["\\])')


@dataclass(frozen=True)
class FieldMatch:
    """Executions whose recorded field `field` holds exactly `value` at `path` (keys and array indexes)."""

    field: str
    path: tuple[str | int, ...]
    value: JsonScalar

    def show(self) -> str:
        """The term's spelling (`parse_field_term` reads it back to this match)."""
        segments = ".".join(_show_segment(s) for s in (self.field, *self.path))
        if isinstance(self.value, str):
            escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
            return f'{PREFIX}{segments}="{escaped}"'
        return f"{PREFIX}{segments}={json.dumps(self.value)}"


def _show_segment(segment: str | int) -> str:
    if isinstance(segment, int):
        return str(segment)
    if re.fullmatch(_BARE_KEY, segment) and not segment.isdigit():
        return segment
    return f'"{segment}"'


def parse_field_term(term: str) -> FieldMatch:
    """`field:order.customer=ada` → FieldMatch("order", ("customer",), "ada"); `FilterParseError` when
    the term is not one (saying what is wrong and how it is written)."""
    _check_text(term, term)
    if not term.startswith(PREFIX):
        raise FilterParseError(f"{term!r} is not a field term: write {PREFIX}<field>.<path>=<value>")
    rest = term[len(PREFIX) :]
    segments: list[str | int] = []
    at = 0
    while True:
        segment, at = _segment(term, rest, at)
        segments.append(segment)
        if at < len(rest) and rest[at] == ".":
            at += 1
            continue
        break
    if at >= len(rest) or rest[at] != "=":
        raise FilterParseError(f"{term!r} has no '=<value>' after its path")
    name = segments[0]
    if isinstance(name, int):
        name = str(name)
    return FieldMatch(name, tuple(segments[1:]), _value(term, rest[at + 1 :]))


def _segment(term: str, rest: str, at: int) -> tuple[str | int, int]:
    key = _KEY.match(rest, at)
    if not key:
        raise FilterParseError(
            f"{term!r}: expected a path key at position {len(PREFIX) + at + 1} (quote a key holding"
            " dots, spaces or '='; a key cannot hold quotes, backslashes or control characters)"
        )
    text = key.group()
    if text.startswith('"'):
        return text[1:-1], key.end()
    # only ASCII digits index a list: `isdigit` also holds for '³', which no list index spells
    return (int(text) if text.isascii() and text.isdigit() else text), key.end()


def _check_text(term: str, text: str) -> None:
    """No store can hold a NUL or half a surrogate pair (a JSON request body can spell both)."""
    if "\x00" in text:
        raise FilterParseError(f"{term!r}: a term cannot hold a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise FilterParseError(f"{term!r}: a term cannot hold an unpaired surrogate") from None


def _value(term: str, text: str) -> JsonScalar:
    if not text:
        raise FilterParseError(f'{term!r} has an empty value: write "" to match the empty string')
    if text.startswith('"'):
        if not _QUOTED.fullmatch(text):
            raise FilterParseError(
                f'{term!r}: a quoted value ends at its closing quote and escapes only \\" and \\\\'
            )
        return _ESCAPE.sub(r"\1", text[1:-1])
    if text in _LITERALS:
        return _LITERALS[text]
    if _NUMBER.fullmatch(text):
        number = json.loads(text)
        if isinstance(number, int):
            return number
        # beyond a float's range no recorded number can equal it (they are finite): it is the text
        return float(number) if math.isfinite(number) else text
    if text[0] in "[{" or '"' in text or "\\" in text:
        raise FilterParseError(
            f"{term!r}: the value must be a number, true, false, null or text (quote text holding quotes)"
        )
    return text


def split_terms(query: str) -> tuple[list[FieldMatch], list[str]]:
    """A search box's text: its `field:` terms parsed, and its other words as typed (split on spaces
    outside double quotes)."""
    matches: list[FieldMatch] = []
    words: list[str] = []
    for word in _words(query):
        if word.startswith(PREFIX):
            matches.append(parse_field_term(word))
        else:
            words.append(word)
    return matches, words


def _words(query: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    quoted = False
    escaped = False
    for char in query:
        if quoted and escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char.isspace() and not quoted:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(char)
    if quoted:
        raise FilterParseError(f"{query!r} has an unclosed double quote")
    if current:
        words.append("".join(current))
    return words


def _kind(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def value_at(value: Any, path: Sequence[str | int]) -> tuple[bool, Any]:
    """(found, the value at `path`): a key walks an object only, an index an array only."""
    for segment in path:
        if isinstance(segment, int):
            if not isinstance(value, list) or segment >= len(value):
                return False, None
            value = value[segment]
        elif isinstance(value, dict) and segment in value:
            value = value[segment]
        else:
            return False, None
    return True, value


def field_matches(match: FieldMatch, fields: Mapping[str, FieldData]) -> bool:
    """The reference meaning of a field term (the memory store uses it; SQL stores mirror it)."""
    data = fields.get(match.field)
    if data is None:
        return False
    found, value = value_at(data.decode(), match.path)
    return found and _kind(value) == _kind(match.value) and value == match.value
