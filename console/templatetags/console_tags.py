"""Template helpers of the console."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def get(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """`mapping|get:key` (None when absent)."""
    return None if mapping is None else mapping.get(key)
