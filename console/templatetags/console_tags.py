"""Template helpers of the console."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def get(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """`mapping|get:key` (None when absent)."""
    return None if mapping is None else mapping.get(key)


_UNSEEN = frozenset({"Cc", "Zl", "Zp"})  # what engine.ids refuses and a page would not show


@register.filter
def visible(text: str) -> str:
    """`text` with the characters a page would not show (controls, line and paragraph separators) written
    as escapes (`\\n`, `\\x07`, `\\u2028`): an id written before the id rule reads as it is stored."""
    return "".join(
        char.encode("unicode_escape").decode("ascii") if unicodedata.category(char) in _UNSEEN else char
        for char in str(text)
    )
