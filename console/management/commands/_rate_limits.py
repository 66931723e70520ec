"""`flowdeck rate-limits`: every rate limit with its configured rate, the rate observed over the last whole
minute, the executions it holds back now, and a per-key limit's busiest keys (`console.rate_limits`).

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.core.management.base import CommandParser

from flowdeck.console import rate_limit_schemas, rate_limits
from flowdeck.console.management.commands._output import table

__all__ = ["add_arguments", "run"]

Emit = Callable[[Any, str], None]


def add_arguments(parser: CommandParser) -> None:
    """No arguments beyond the verbs' own (`--json`)."""


def _listing(found: Sequence[rate_limits.Shown]) -> str:
    if not found:
        return "no rate limits (declare RATE_LIMITS in a flows module, or FLOWDECK_RATE_LIMITS)"
    rows = [(s.name, s.configured, s.observed, s.limited_now, s.taken, s.reserved, s.keys) for s in found]
    lines = [table(("name", "configured", "observed", "rate-limited now", "taken", "reserved", "keys"), rows)]
    for s in found:
        if s.busiest:
            busiest = ", ".join(f"{k.key} {k.observed}" for k in s.busiest)
            lines.append(f"{s.name} busiest keys: {busiest}")
    return "\n".join(lines)


async def run(emit: Emit) -> None:
    found = await rate_limits.shown_all()
    items = [rate_limit_schemas.rate_limit_of(s).model_dump(mode="json") for s in found]
    emit({"items": items}, _listing(found))
