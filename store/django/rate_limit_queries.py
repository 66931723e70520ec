"""The SQL of rate limits (`store.rate_limits`), for PostgreSQL and SQLite alike: instants are integer
microseconds since the epoch, passed in from the store's clock (never the database's now())."""

from __future__ import annotations

from flowdeck.store.django.queries import Query

__all__ = ["TAKE_TOKEN"]

_ROW = "flowstore_rate_bucket"
# this take's slot: max(now, tat - tolerance) over the row as it was (`rate_limits.step`)
_SLOT = f"(CASE WHEN {_ROW}.tat - %(tolerance)s > %(now)s THEN {_ROW}.tat - %(tolerance)s ELSE %(now)s END)"
_LATER = f"{_ROW}.tat - %(tolerance)s > %(now)s"  # the slot is later than now: a reservation
_WINDOW_ENDS = f"{_ROW}.window_start + %(window)s"

TAKE_TOKEN = Query(
    "take_token",
    "One take of a limit key's next token: the row's first take inserts it (taken now), every later one "
    "moves its theoretical arrival time and counts the slot, in one atomic statement (a row lock on "
    "PostgreSQL, the write lock on SQLite), answering the new arrival time (the store derives the slot).",
    f"""
    INSERT INTO {_ROW} (name, key, tat, taken, reserved, window_start, window_slots, previous_slots)
    VALUES (%(name)s, %(key)s, %(now)s + %(interval)s, 1, 0, %(now)s, 1, 0)
    ON CONFLICT (name, key) DO UPDATE SET
        tat = (CASE WHEN {_ROW}.tat > %(now)s THEN {_ROW}.tat ELSE %(now)s END) + %(interval)s,
        taken = {_ROW}.taken + (CASE WHEN {_LATER} THEN 0 ELSE 1 END),
        reserved = {_ROW}.reserved + (CASE WHEN {_LATER} THEN 1 ELSE 0 END),
        window_start = CASE
            WHEN {_SLOT} >= {_WINDOW_ENDS} + %(window)s THEN {_SLOT}
            WHEN {_SLOT} >= {_WINDOW_ENDS} THEN {_WINDOW_ENDS}
            ELSE {_ROW}.window_start END,
        window_slots = CASE WHEN {_SLOT} >= {_WINDOW_ENDS} THEN 1 ELSE {_ROW}.window_slots + 1 END,
        previous_slots = CASE
            WHEN {_SLOT} >= {_WINDOW_ENDS} + %(window)s THEN 0
            WHEN {_SLOT} >= {_WINDOW_ENDS} THEN {_ROW}.window_slots
            ELSE {_ROW}.previous_slots END
    RETURNING tat
    """,
)
