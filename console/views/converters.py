"""The path converter of execution ids: any stored id in one path segment, and back.

Ids written before the id rule (`engine.ids`) may hold what the rule now refuses: a newline, a `/`, a `%`,
or be `.` or `..`. Their rows must still be listed and their pages open, so every id round-trips: `%` and
`/` (and a whole `.` or `..`, which browsers would resolve away) are written as `%25`, `%2F`, `%2E`, and
Django's `reverse` then URL-quotes the rest (a newline becomes `%0A`). An id that keeps the rule and holds
no `%` is written as it is.
"""

from __future__ import annotations

import re

__all__ = ["StoredId"]

_ESCAPED = re.compile("%(25|2F|2E)", re.IGNORECASE)


class StoredId:
    """`<stored_id:...>`: one path segment holding any stored execution id."""

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return _ESCAPED.sub(lambda found: chr(int(found[1], 16)), value)

    def to_url(self, value: str) -> str:
        text = value.replace("%", "%25").replace("/", "%2F")
        return text.replace(".", "%2E") if text in {".", ".."} else text
