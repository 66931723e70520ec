"""Durations as an operator types them: `90s`, `15m`, `12h`, `30d` (a whole number and one unit).

One parser for every place that takes one: `flow purge --older-than`, `FLOWDECK_RETENTION`, and the ages
that `flow activity --since` and the activity page accept (`console.activity.parse_time`).
"""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["parse_age", "show_age"]

_AGE = re.compile(r"([0-9]{1,6})([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_age(text: str) -> timedelta:
    """`30d` → 30 days; ValueError (saying what is expected) for anything else."""
    found = _AGE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text[:40]!r} is not a duration: give a whole number and a unit (90m, 12h, 30d)")
    return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})


def show_age(age: timedelta) -> str:
    """A duration in the largest unit that writes it whole (`parse_age`'s spelling): 30 days → `30d`."""
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
