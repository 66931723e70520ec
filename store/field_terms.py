"""Search by a recorded value: the `field:<name>.<json.path><op><value>` term, the `text:<words>` term, their
parsing, and their meaning.

`<name>` is a recorded field's durable key (an input's name, a step's output path); the segments after it
walk into the field's JSON value: a bare run of digits indexes an array, any other segment names an object
key (double-quote a segment to hold dots, `=`, `<`, `>`, spaces, a trailing `^` or `~`, or digits meant as
a key: `"0"`). The operator is one of:

- `=`: equal, typed. The value is JSON when it reads as a number, `true`, `false` or `null`; otherwise it is
  the text itself; a double-quoted value is a JSON string (so `"1"` is the text 1, and quotes allow spaces).
  Text is equal ignoring case (`Ada` finds `ada`); the number 1 equals 1.0 but not the text "1".
- `^=` (starts with) and `~=` (contains): the value is always text, and matches text only, ignoring case.
- `>`, `>=`, `<`, `<=`: the value is a number, and matches numbers only.

A missing path matches nothing. `text:<words>` (quote words holding spaces) finds the failed and stopped
executions whose message (a failure's error, a stop's reason) contains the words, ignoring case.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from flowdeck.store import filter_limits
from flowdeck.store.fields import FieldData
from flowdeck.store.filters import FilterParseError
from flowdeck.store.status import Failed, Status, Stopped

__all__ = [
    "OPERATORS",
    "PREFIX",
    "RANGES",
    "TERM_PATTERN",
    "TEXT_PREFIX",
    "FieldMatch",
    "JsonScalar",
    "SearchTerm",
    "TextMatch",
    "field_matches",
    "term_matches",
    "parse_field_term",
    "parse_terms",
    "split_terms",
]

PREFIX = "field:"
TEXT_PREFIX = "text:"
JsonScalar: TypeAlias = str | int | float | bool | None
RANGES = (">=", "<=", ">", "<")  # compare numbers
TEXTUAL = ("^=", "~=")  # starts with, contains: text, ignoring case
OPERATORS = ("=", *TEXTUAL, *RANGES)  # longest first where one begins another

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS: dict[str, JsonScalar] = {"true": True, "false": False, "null": None}
# The grammar, written once: the parser reads with these pieces, and the REST document states TERM_PATTERN
# (so what it calls valid is exactly what is accepted). A quoted key holds no quote, backslash or control
# character (SQLite's JSON paths cannot address those); a quoted value escapes `"` and `\` alone. The
# pattern states `store.filter_limits` too (the path's depth, the value's length, a number's digits); the
# term's length is the document's maxLength.
# A bare key stops at an operator: it holds no `<`, `>`, and no `^` or `~` right before `=`.
_BARE_KEY = r'(?:[^."=\\ <>^~\x00-\x1f]|[\^~](?!=))+'
_QUOTED_KEY = r'"[^"\\\x00-\x1f]+"'
_VALUE_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\])'
_BARE_FIRST, _BARE_REST = r'[^"\\\[{\x00]', r'[^"\\\x00]'
_SEGMENT = f"(?:{_BARE_KEY}|{_QUOTED_KEY})"
_TOO_MANY_DIGITS = f"(?!-?[0-9]{{{filter_limits.MAX_DIGITS + 1}}})"
_VALUE_LIMITED = (
    f'"{_VALUE_CHAR}{{0,{filter_limits.MAX_VALUE}}}"'
    f"|{_TOO_MANY_DIGITS}{_BARE_FIRST}{_BARE_REST}{{0,{filter_limits.MAX_VALUE - 1}}}"
)
# A range's number: at most MAX_DIGITS whole digits and a two-digit exponent, so it is always finite.
_RANGE_NUMBER = (
    f"-?(?:0|[1-9][0-9]{{0,{filter_limits.MAX_DIGITS - 1}}})(?:\\.[0-9]{{1,800}})?(?:[eE][+-]?[0-9]{{1,2}})?"
)
_FIELD_PATTERN = (
    f"field:{_SEGMENT}(?:\\.{_SEGMENT}){{0,{filter_limits.MAX_PATH}}}"
    f"(?:(?:=|\\^=|~=)(?:{_VALUE_LIMITED})|(?:>=|<=|>|<){_RANGE_NUMBER})"
)
_TEXT_PATTERN = f"text:(?:{_VALUE_LIMITED})"
TERM_PATTERN = f"^(?:{_FIELD_PATTERN}|{_TEXT_PATTERN})$"
_RANGE = re.compile(_RANGE_NUMBER)
_KEY = re.compile(f"{_BARE_KEY}|{_QUOTED_KEY}")
_QUOTED = re.compile(f'"{_VALUE_CHAR}*"')
_ESCAPE = re.compile(r'\\(["\\])')


@dataclass(frozen=True)
class FieldMatch:
    """Executions whose recorded field `field` holds, at `path` (keys and array indexes), a value that `op`
    (one of `OPERATORS`) relates to `value`."""

    field: str
    path: tuple[str | int, ...]
    value: JsonScalar
    op: str = "="

    def show(self) -> str:
        """The term's spelling (`parse_field_term` reads it back to this match)."""
        segments = ".".join(_show_segment(s) for s in (self.field, *self.path))
        return f"{PREFIX}{segments}{self.op}{_show_value(self.value)}"


@dataclass(frozen=True)
class TextMatch:
    """Failed and stopped executions whose message (a failure's error, a stop's reason) contains `text`,
    ignoring case."""

    text: str

    def show(self) -> str:
        return f"{TEXT_PREFIX}{_show_value(self.text)}"


SearchTerm: TypeAlias = FieldMatch | TextMatch


def _show_value(value: JsonScalar) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return json.dumps(value)


def _show_segment(segment: str | int) -> str:
    if isinstance(segment, int):
        return str(segment)
    # a key ending in ^ or ~ would read as the operator ^= or ~= before the value: quoted
    if re.fullmatch(_BARE_KEY, segment) and not segment.isdigit() and not segment.endswith(("^", "~")):
        return segment
    return f'"{segment}"'


def parse_field_term(term: str) -> SearchTerm:
    """`field:order.customer=ada` → FieldMatch("order", ("customer",), "ada"); `text:declined` →
    TextMatch("declined"); `FilterParseError` when the term is not one (saying what is wrong and how it is
    written) or is past `filter_limits`."""
    filter_limits.check_term(term)
    _check_text(term, term)
    if term.startswith(TEXT_PREFIX):
        return _text_term(term)
    if not term.startswith(PREFIX):
        raise FilterParseError(f"{term!r} is not a field term: write {PREFIX}<field>.<path>=<value>")
    rest = term[len(PREFIX) :]
    segments: list[str | int] = []
    at = 0
    while True:
        segment, at = _segment(term, rest, at)
        segments.append(segment)
        filter_limits.check_path(term, len(segments) - 1)
        if at < len(rest) and rest[at] == ".":
            at += 1
            continue
        break
    op = next((o for o in _BY_LENGTH if rest.startswith(o, at)), None)
    if op is None:
        raise FilterParseError(
            f"{term!r} has no '=<value>' after its path (nor another operator: {' '.join(OPERATORS[1:])})"
        )
    name = segments[0]
    if isinstance(name, int):
        name = str(name)
    text = rest[at + len(op) :]
    return FieldMatch(name, tuple(segments[1:]), _operand(term, op, text), op)


_BY_LENGTH = sorted(OPERATORS, key=len, reverse=True)


def _operand(term: str, op: str, text: str) -> JsonScalar:
    """The value an operator compares with: typed for `=`, text for `^=` and `~=`, a number for a range."""
    if op in RANGES:
        if not _RANGE.fullmatch(text):
            raise FilterParseError(
                f"{term!r}: {op} compares numbers: write a number after it (field:order.total>=100)"
            )
        number: int | float = json.loads(text)
        return number
    value = _value(term, text)
    if op in TEXTUAL:
        return value if isinstance(value, str) else text
    return value


def _text_term(term: str) -> TextMatch:
    text = term[len(TEXT_PREFIX) :]
    value = _value(term, text)
    return TextMatch(value if isinstance(value, str) else text)


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
        value = _ESCAPE.sub(r"\1", text[1:-1])
        filter_limits.check_value(term, value, quoted=True)
        return value
    filter_limits.check_value(term, text, quoted=False)
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


def parse_terms(terms: Sequence[str | SearchTerm]) -> list[SearchTerm]:
    """Terms as a search takes them (each spelled, or parsed already); `FilterParseError` for one that is
    not a term, or for more than `filter_limits.MAX_TERMS`."""
    filter_limits.check_terms(len(terms))
    return [parse_field_term(t) if isinstance(t, str) else t for t in terms]


def split_terms(query: str) -> tuple[list[SearchTerm], list[str]]:
    """A search box's text: its `field:` and `text:` terms parsed, and its other words as typed (split on
    spaces outside double quotes). `FilterParseError` for a term that is not one, or a box past
    `filter_limits`."""
    filter_limits.check_query(query)
    matches: list[SearchTerm] = []
    words: list[str] = []
    for word in _words(query):
        if word.startswith((PREFIX, TEXT_PREFIX)):
            matches.append(parse_field_term(word))
        else:
            words.append(word)
    filter_limits.check_terms(len(matches))
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
    if not found:
        return False
    wanted = match.value
    if match.op in RANGES:
        return _kind(value) == "number" and _compare(match.op, value, wanted)
    if isinstance(wanted, str):
        if not isinstance(value, str):
            return False
        if match.op == "^=":
            return fold(value).startswith(fold(wanted))
        if match.op == "~=":
            return fold(wanted) in fold(value)
        return fold(value) == fold(wanted)
    return _kind(value) == _kind(wanted) and value == wanted


def _compare(op: str, value: Any, bound: Any) -> bool:
    if op == ">":
        return bool(value > bound)
    if op == ">=":
        return bool(value >= bound)
    if op == "<":
        return bool(value < bound)
    return bool(value <= bound)


def fold(text: str) -> str:
    """Text as compared ignoring case: lower case (what SQL's lower() and a case-blind regex agree on)."""
    return text.lower()


def message_of(status: Status) -> str | None:
    """The message a `text:` term searches: a failure's error, a stop's reason; None for other states."""
    if isinstance(status, Failed):
        return status.error
    if isinstance(status, Stopped):
        return status.reason
    return None


def term_matches(term: SearchTerm, fields: Mapping[str, FieldData], status: Status) -> bool:
    """The reference meaning of a search term, field or text, for one execution."""
    if isinstance(term, TextMatch):
        message = message_of(status)
        return message is not None and fold(term.text) in fold(message)
    return field_matches(term, fields)
