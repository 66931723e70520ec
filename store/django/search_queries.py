"""The raw SQL of the search forms beyond an exact value (issue 29), for PostgreSQL and SQLite: text ignoring
case, by prefix and by part; numbers by range; a `text:` term over failure and stop messages. Apart from
`queries` (the catalogue of every other statement) and written the same way: each statement named and
described, with a `postgresql` text where the backends differ. `store.django.field_search` binds them.
"""

from __future__ import annotations

from flowdeck.store.django.queries import FIELD_JSONB, Query

__all__ = ["FIELD_RANGE", "FIELD_TEXT", "MESSAGE_KINDS", "MESSAGE_MATCH", "MESSAGE_TEXT"]

# The message a `text:` term searches (a failure's error, a stop's reason), as PostgreSQL's trigram index
# holds it (migration 0012 spells it again; tests/store/test_field_search_plan.py EXPLAINs its use). NULL
# where jsonb refuses the status (a \u0000 escape), as FIELD_JSONB does.
MESSAGE_TEXT = (
    "(CASE WHEN strpos(status, '\\u0000') = 0"
    " THEN coalesce(status::jsonb ->> 'error', status::jsonb ->> 'reason') END)"
)
MESSAGE_KINDS = "('failed', 'stopped')"

FIELD_TEXT = Query(
    "field_text",
    """The executions whose field %s holds text at a JSON path that matches, ignoring case (`=`, `^=` and
    `~=` alike: the pattern says which). SQLite: the path twice, then a LIKE pattern (escaped with `\\`).
    PostgreSQL: an ILIKE pattern over the value's JSON text (the trigram index of migration 0012 answers
    it, over-inclusive: it may match a key or another value) and the exact jsonpath predicate (`@@`, a
    case-blind `like_regex` at the path).""",
    """
    SELECT execution_id FROM flowstore_field
    WHERE name = %s AND json_valid(value) AND json_type(value, %s) = 'text'
        AND lower(json_extract(value, %s)) LIKE lower(%s) ESCAPE '\\'
    """,
    postgresql=f"""
    SELECT execution_id FROM flowstore_field
    WHERE name = %s AND value ILIKE %s AND {FIELD_JSONB} @@ %s::jsonpath
    """,
)

FIELD_RANGE = Query(
    "field_range",
    """The executions whose field %s holds a number at a JSON path that `{op}` (one of `field_terms.RANGES`,
    never user text) relates to a bound. SQLite: the path twice, then the bound; no index serves it, the
    rows of the field named are read. PostgreSQL: the numbers the database keeps by path (migration 0013),
    the path spelled as `field_search.number_path` spells it, then `{bounds}`: every range term on that
    field and path at once (`value >= %s AND value < %s`), one scan of the index's range.""",
    """
    SELECT execution_id FROM flowstore_field
    WHERE name = %s AND json_valid(value) AND json_type(value, %s) IN ('integer', 'real')
        AND json_extract(value, %s) {op} %s
    """,
    postgresql="""
    SELECT execution_id FROM flowstore_field_number WHERE name = %s AND path = %s AND {bounds}
    """,
)

MESSAGE_MATCH = Query(
    "message_match",
    """The failed and stopped executions whose message contains a LIKE pattern, ignoring case (SQLite:
    escaped with `\\`; PostgreSQL: ILIKE, from the partial trigram index of migration 0012).""",
    f"""
    SELECT id FROM flowstore_execution
    WHERE status_kind IN {MESSAGE_KINDS}
        AND lower(coalesce(json_extract(status, '$.error'), json_extract(status, '$.reason')))
            LIKE lower(%s) ESCAPE '\\'
    """,
    postgresql=f"""
    SELECT id FROM flowstore_execution WHERE status_kind IN {MESSAGE_KINDS} AND {MESSAGE_TEXT} ILIKE %s
    """,
)
