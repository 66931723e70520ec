"""A search term (`field_terms.SearchTerm`) as SQL: the statement and parameters of each form, per backend.

PostgreSQL answers an `=` term on a number, true, false or null from the GIN index on the values' jsonb
(`jsonb_path_ops`, migration 0007) with a containment document, then checks it exactly with a strict
jsonpath; a text term (`=`, `^=`, `~=`, ignoring case) from the trigram index on the values' JSON text
(migration 0012) with an ILIKE pattern, then a case-blind jsonpath regex; a range from the numbers the
database keeps by path (migration 0013), every bound on one field and path in one scan; a `text:` term
from the trigram index on the failed and stopped executions' messages.
SQLite reads the value at the path with json_type and json_extract, row by row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from django.db.models.expressions import RawSQL

from flowdeck.store import field_terms, spi
from flowdeck.store.django import queries, search_queries
from flowdeck.store.field_terms import JsonScalar

__all__ = [
    "containment",
    "jsonpath",
    "like_pattern",
    "matching_ids",
    "matching_sets",
    "number_path",
    "sqlite_path",
    "text_jsonpath",
]


def matching_ids(vendor: str, match: field_terms.SearchTerm) -> RawSQL:
    """The ids of the executions `match` selects, for an `id__in` filter."""
    if isinstance(match, field_terms.TextMatch):
        return RawSQL(search_queries.MESSAGE_MATCH.text(vendor), [like_pattern(match.text, "~=")])
    if match.op in field_terms.RANGES:
        return _range_ids(vendor, match)
    if isinstance(match.value, str):
        return _text_ids(vendor, match, match.value)
    params: list[Any]
    if vendor == "postgresql":
        params = [match.field, json.dumps(containment(match)), jsonpath(match)]
    else:
        types, value = _sqlite_typed(match.value)
        path = sqlite_path(match.path)
        params = [match.field, path, *types, value, path, value]
    return RawSQL(queries.FIELD_MATCH.text(vendor), params)


def _text_ids(vendor: str, match: spi.FieldMatch, text: str) -> RawSQL:
    if vendor == "postgresql":
        params = [match.field, _prefilter(match.op, text), text_jsonpath(match, text)]
    else:
        path = sqlite_path(match.path)
        params = [match.field, path, path, like_pattern(text, match.op)]
    return RawSQL(search_queries.FIELD_TEXT.text(vendor), params)


def matching_sets(vendor: str, matches: Sequence[field_terms.SearchTerm]) -> list[RawSQL]:
    """The `id__in` sets that select what every term of `matches` selects. On PostgreSQL the range terms on
    one field and path make one set, so `>=990` with `<992` is one scan of the number index between the two
    bounds, not two scans of which one (`<992`) holds nearly every row."""
    sets: list[RawSQL] = []
    ranges: dict[tuple[str, tuple[str | int, ...]], list[spi.FieldMatch]] = {}
    for match in matches:
        is_range = isinstance(match, field_terms.FieldMatch) and match.op in field_terms.RANGES
        if vendor == "postgresql" and is_range:
            ranges.setdefault((match.field, match.path), []).append(match)
        else:
            sets.append(matching_ids(vendor, match))
    sets.extend(_number_ids(group) for group in ranges.values())
    return sets


def _range_ids(vendor: str, match: spi.FieldMatch) -> RawSQL:
    if vendor == "postgresql":
        return _number_ids([match])
    path = sqlite_path(match.path)
    # the operator is one of field_terms.RANGES, which the parser alone produces: never user text
    sql = search_queries.FIELD_RANGE.text(vendor).format(op=match.op)
    return RawSQL(sql, [match.field, path, path, match.value])


def _number_ids(group: Sequence[spi.FieldMatch]) -> RawSQL:
    """PostgreSQL: the executions whose number at one field's path is within every bound of `group` (its
    terms share the field and the path). Each bound is cast to numeric, the column's type: compared as a
    float, the index could not answer it."""
    # the operators are field_terms.RANGES, which the parser alone produces: never user text
    bounds = " AND ".join(f"value {match.op} %s::numeric" for match in group)
    sql = search_queries.FIELD_RANGE.text("postgresql").format(bounds=bounds)
    first = group[0]
    return RawSQL(sql, [first.field, number_path(first.path), *(match.value for match in group)])


def number_path(path: tuple[str | int, ...]) -> str:
    """A path as `flowstore_field_number` spells it (migration 0013's `flowstore_json_numbers`): each key
    JSON-quoted after a dot, each array index in brackets; the value itself is ``."""
    return "".join(f"[{s}]" if isinstance(s, int) else "." + json.dumps(s, ensure_ascii=False) for s in path)


def like_pattern(text: str, op: str) -> str:
    """A LIKE pattern (escaped with a backslash): text equal to, starting with or containing `text`."""
    escaped = re.sub(r"([\\%_])", r"\\\1", text)
    if op == "^=":
        return escaped + "%"
    return f"%{escaped}%" if op == "~=" else escaped


def _prefilter(op: str, text: str) -> str:
    """An ILIKE pattern over a value's JSON text that every match satisfies: the text as JSON spells it
    (quoted where the operator fixes an end), anywhere. Only for ASCII text: other characters a value may
    hold escaped (`\\u00e9`) or not, so they get no prefilter (`%`, which reads the field's rows)."""
    if not text.isascii():
        return "%"
    spelled = json.dumps(text)
    inner = spelled[:-1] if op == "^=" else spelled[1:-1] if op == "~=" else spelled
    return like_pattern(inner, "~=")


def text_jsonpath(match: spi.FieldMatch, text: str) -> str:
    """`strict $."order"."customer" like_regex "^ada$" flag "i"`: the text at the path matches, ignoring
    case, whole (`=`), at its start (`^=`) or anywhere (`~=`); every ASCII character not a letter or digit
    is escaped, so the regex reads the text literally."""
    literal = re.sub(r"([\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f])", r"\\\1", text)
    regex = {"=": f"^{literal}$", "^=": f"^{literal}"}.get(match.op, literal)
    return _steps(match.path, f' like_regex {json.dumps(regex)} flag "i"')


def _steps(path: tuple[str | int, ...], predicate: str) -> str:
    steps = "".join(f"[{s}]" if isinstance(s, int) else "." + json.dumps(s) for s in path)
    return f"strict ${steps}{predicate}"


def containment(match: spi.FieldMatch) -> Any:
    """The jsonb document every matching value contains: the path's keys down to the value, or down to an
    empty array where the path first indexes one (containment cannot say which element)."""
    keys: list[str] = []
    document: Any = match.value
    for segment in match.path:
        if isinstance(segment, int):
            document = []
            break
        keys.append(segment)
    for key in reversed(keys):
        document = {key: document}
    return document


def jsonpath(match: spi.FieldMatch) -> str:
    """`strict $."order"."items"[0] == "ada"`: strict, so an array is not unwrapped and a missing key is
    no match; `==` compares typed (1 equals 1.0, never "1")."""
    return _steps(match.path, f" == {json.dumps(match.value)}")


def sqlite_path(path: tuple[str | int, ...]) -> str:
    # The term's parser refused keys holding a quote or a backslash, which these paths cannot escape. A key
    # is spelled as the recorded JSON spells it (`FieldData.of`: json.dumps, ASCII with \u escapes), as
    # SQLite (3.40) compares a path's label with a key's raw text: `"prix €"` would miss `"prix \u20ac"`.
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else "." + json.dumps(s) for s in path)


def _sqlite_typed(value: JsonScalar) -> tuple[tuple[str, str], Any]:
    """The json_type words the value at the path may have, and what json_extract must then equal."""
    if value is None:
        return ("null", "null"), None
    if isinstance(value, bool):
        word = "true" if value else "false"
        return (word, word), None
    if isinstance(value, int | float):
        # SQLite binds 64 bits, and reads a JSON integer beyond them as a real anyway
        return ("integer", "real"), value if -(2**63) <= value < 2**63 else float(value)
    return ("text", "text"), value
