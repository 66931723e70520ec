"""A field term (`spi.FieldMatch`) as SQL: the parameters of `queries.FIELD_MATCH` for each backend.

PostgreSQL answers a term from the GIN index on the values' jsonb (`jsonb_path_ops`, migration 0007) with
a containment document, then checks it exactly with a strict jsonpath; SQLite reads the value at the path
with json_type and json_extract, row by row.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models.expressions import RawSQL

from store import spi
from store.django import queries
from store.field_terms import JsonScalar

__all__ = ["containment", "jsonpath", "matching_ids", "sqlite_path"]


def matching_ids(vendor: str, match: spi.FieldMatch) -> RawSQL:
    """The ids of the executions `match` selects, for an `id__in` filter."""
    params: list[Any]
    if vendor == "postgresql":
        params = [match.field, json.dumps(containment(match)), jsonpath(match)]
    else:
        types, value = _sqlite_typed(match.value)
        path = sqlite_path(match.path)
        params = [match.field, path, *types, value, path, value]
    return RawSQL(queries.FIELD_MATCH.text(vendor), params)


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
    steps = "".join(f"[{s}]" if isinstance(s, int) else "." + json.dumps(s) for s in match.path)
    return f"strict ${steps} == {json.dumps(match.value)}"


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
