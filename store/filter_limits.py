"""How big a search may be: the one bound on a filter's size, depth and numbers, for every surface.

A filter is parsed in one place (`store.filters`, `store.field_terms`), so each reader (the REST API, the
console's list and bulk pages, the CLI) refuses the same oversized filter with its own `FilterParseError`
answer, before anything is searched or recorded. The bounds keep the work a filter asks for small and the
SQL it becomes within what each backend takes: a path thousands of keys deep overflows the nesting of
PostgreSQL's containment document (and Python's `json.dumps`), and an integer of thousands of digits is
more than Python will convert. No recorded value an operator means to find is near them.
"""

from __future__ import annotations

from flowdeck.store.filters import FilterParseError

__all__ = [
    "MAX_DIGITS",
    "MAX_PATH",
    "MAX_QUERY",
    "MAX_TERM",
    "MAX_TERMS",
    "MAX_VALUE",
    "check_path",
    "check_query",
    "check_term",
    "check_terms",
    "check_value",
]

MAX_TERMS = 20  # field terms in one search (the search box's and the API's `where` together)
MAX_PATH = 64  # keys and indexes after the field's name
MAX_VALUE = 1000  # characters of the value matched (of a quoted value: once unquoted)
MAX_DIGITS = 100  # digits a number may start with (its whole part)
MAX_TERM = 4000  # characters of one `field:` term as written (a whole quoted value of escapes fits)
MAX_QUERY = 8000  # characters of a search box (an id prefix and its terms)


def check_query(query: str) -> None:
    """A search box longer than `MAX_QUERY` is refused before it is read."""
    if len(query) > MAX_QUERY:
        raise FilterParseError(f"a search is at most {MAX_QUERY} characters (got {len(query)})")


def check_term(term: str) -> None:
    """A term longer than `MAX_TERM` is refused before it is read."""
    if len(term) > MAX_TERM:
        raise FilterParseError(
            f"{_shown(term)}: a field: term is at most {MAX_TERM} characters (got {len(term)})"
        )


def check_terms(count: int) -> None:
    """More than `MAX_TERMS` field terms in one search are refused."""
    if count > MAX_TERMS:
        raise FilterParseError(f"a search takes at most {MAX_TERMS} field: terms (got {count})")


def check_path(term: str, segments: int) -> None:
    """A path deeper than `MAX_PATH` (counted as the parser reads it, so it stops at the first too many)."""
    if segments > MAX_PATH:
        raise FilterParseError(f"{_shown(term)}: a field's path is at most {MAX_PATH} keys and indexes deep")


def check_value(term: str, value: str, *, quoted: bool) -> None:
    """A value longer than `MAX_VALUE` (a quoted one counted once unquoted); a bare one starting with more
    than `MAX_DIGITS` digits (a number that long is more than any store compares; quoted, it is text)."""
    if len(value) > MAX_VALUE:
        raise FilterParseError(
            f"{_shown(term)}: a value is at most {MAX_VALUE} characters (got {len(value)})"
        )
    unsigned = value.removeprefix("-")
    digits = len(unsigned) - len(unsigned.lstrip("0123456789"))
    if not quoted and digits > MAX_DIGITS:
        raise FilterParseError(
            f"{_shown(term)}: a number is at most {MAX_DIGITS} digits (got {digits}); quote it to match text"
        )


def _shown(term: str) -> str:
    """The term in a message: its start only, when long."""
    return repr(term) if len(term) <= 80 else repr(term[:80]) + "…"
