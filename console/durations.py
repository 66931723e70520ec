"""Durations as an operator types them: `90s`, `15m`, `12h`, `30d` (a whole number and one unit), and as
the timeline writes them for reading: `850 µs`, `1.25 s`, `3 min 05 s`, offsets `+12 ms`.

One parser for every place that takes one: `flowdeck purge --older-than`, `FLOWDECK_RETENTION`, and the ages
that `flowdeck activity --since` and the activity page accept (`flowdeck.console.activity.parse_time`).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = ["duration_text", "offset_text", "parse_age", "show_age"]

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


def duration_text(span: timedelta) -> str:
    """A duration as an operator reads it: 850 µs, 12 ms, 1.25 s, 3 min 05 s, 2 h 10 min, 3 d 4 h."""
    seconds = span.total_seconds()
    if seconds < 0:
        return "-" + duration_text(-span)
    if seconds < 0.001:
        return f"{round(seconds * 1_000_000)} µs"
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


def offset_text(at: datetime, origin: datetime) -> str:
    """`at` relative to the execution's first event: 0, +12 ms, +1.25 s."""
    if at == origin:
        return "0"
    return "+" + duration_text(at - origin) if at >= origin else duration_text(at - origin)
