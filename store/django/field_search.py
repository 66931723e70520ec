"""A search term (`field_terms.SearchTerm`) as SQL: the statement and parameters of each form, per backend.

PostgreSQL answers an `=` term on a number, true, false or null from the GIN index on the values' jsonb
(`jsonb_path_ops`, migration 0007) with a containment document, then checks it exactly with a strict
jsonpath; a text term (`=`, `^=`, `~=`, ignoring case) from the trigram index on the values' JSON text
(migration 0012) with an ILIKE pattern, then a case-blind jsonpath regex; a range with a jsonpath
comparison alone; a `text:` term from the trigram index on the failed and stopped executions' messages.
SQLite reads the value at the path with json_type and json_extract, row by row.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db.models.expressions import RawSQL

from flowdeck.store import field_terms, spi
from flowdeck.store.django import queries, search_queries
from flowdeck.store.field_terms import JsonScalar

__all__ = ["containment", "jsonpath", "like_pattern", "matching_ids", "sqlite_path", "text_jsonpath"]


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


def _range_ids(vendor: str, match: spi.FieldMatch) -> RawSQL:
    sql = search_queries.FIELD_RANGE.text(vendor)
    if vendor == "postgresql":
        return RawSQL(sql, [match.field, _steps(match.path, f" {match.op} {json.dumps(match.value)}")])
    path = sqlite_path(match.path)
    # the operator is one of field_terms.RANGES, which the parser alone produces: never user text
    return RawSQL(sql.format(op=match.op), [match.field, path, path, match.value])


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
    # the term's parser refused keys holding a quote or a backslash, which these paths cannot escape
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f'."{s}"' for s in path)


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
