"""Template helpers of the console."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django import template

from flowdeck.console import badges, mount

register = template.Library()


@register.simple_tag
def live_path() -> str:
    """The websocket's address where the console is mounted (`flowdeck.console.mount.live_path`)."""
    return mount.live_path()


@register.filter
def get(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """`mapping|get:key` (None when absent)."""
    return None if mapping is None else mapping.get(key)


_UNSEEN = frozenset({"Cc", "Zl", "Zp"})  # what flowdeck.engine.ids refuses and a page would not show


@register.filter
def visible(text: str) -> str:
    """`text` with the characters a page would not show (controls, line and paragraph separators) written
    as escapes (`\\n`, `\\x07`, `\\u2028`): an id written before the id rule reads as it is stored."""
    return "".join(
        char.encode("unicode_escape").decode("ascii") if unicodedata.category(char) in _UNSEEN else char
        for char in str(text)
    )


def _span_words(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


@register.filter
def span(delta: timedelta | None) -> str:
    """A duration in the two largest units a person reads (`3 min 12 s`, `2 h 05 min`); `–` for none."""
    if delta is None:
        return "–"
    seconds = int(delta.total_seconds())
    return "<1 s" if seconds < 1 else _span_words(seconds)


@register.filter
def seconds(value: float | None) -> str:
    """A short duration in seconds as a person reads it: `4 ms`, `0.25 s`, `12 s`, `3 min 12 s`; `–`."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms" if value < 0.1 else f"{value:.2f} s"
    return f"{value:.1f} s" if value < 60 else _span_words(int(value))


_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


@register.filter
def ago(moment: datetime | None, now: datetime | None) -> str:
    """`moment` relative to `now` in its largest unit: `12 s ago`, `3 min ago`, `in 2 h` (the absolute
    time goes in a title; console.js's `agoWords` says the same as time passes)."""
    if moment is None or now is None:
        return ""
    seconds = int((now - moment).total_seconds())
    if seconds == 0:
        return "just now"
    size, unit = next((size, unit) for size, unit in _UNITS if abs(seconds) >= size)
    words = f"{abs(seconds) // size} {unit}"
    return f"{words} ago" if seconds > 0 else f"in {words}"


@register.filter
def status_label(word: str) -> str:
    """What a badge of status word `word` reads (`flowdeck.console.badges.label_of`)."""
    return badges.label_of(word)
