"""The order in which a claim takes ready executions: priority first, and a fair share for the oldest.

An execution's priority is an integer from `LOWEST` to `HIGHEST` (Django's task priorities: -100 to 100,
higher first, `DEFAULT` 0), given at its start (or its workflow's default, `Meta.priority`) and kept on its
row; the Created event's data carries it (`{"priority": 5}`, absent when it is the default), so a store sets
the row from the event it writes anyway, and the history says what the execution was started with.

A claim takes the ready executions of the highest priority first, oldest first among equals. Strict
priority alone would starve: while executions of a higher priority keep arriving, a lower one would never
run. So every `FAIR_SHARE`-th claim a store object makes takes the OLDEST ready executions, whatever their
priority. The guarantee, per claiming process: at least one claim in `FAIR_SHARE` goes to the oldest ready
work, so an execution's wait is bounded by the work ready before it, never by what arrives after it; and
while every priority has work ready, the lower ones get at least 1/`FAIR_SHARE` of the claims. When no
execution has a priority (all `DEFAULT`), both orders are creation order: nothing changes for a project that
never sets one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT", "FAIR_SHARE", "HIGHEST", "LOWEST", "FairShare", "event_data", "priority_of"]

LOWEST = -100
HIGHEST = 100
DEFAULT = 0
FAIR_SHARE = 4


def priority_of(data: Mapping[str, Any]) -> int:
    """The priority a Created event's data carries (`DEFAULT` when it carries none)."""
    value = data.get("priority", DEFAULT)
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT


def event_data(priority: int) -> dict[str, Any]:
    """A Created event's data for `priority`: nothing for the default, so that an ordinary start's history
    is what it always was."""
    return {} if priority == DEFAULT else {"priority": priority}


class FairShare:
    """Counts a store object's claims and says which take the oldest ready work (`oldest_first`)."""

    def __init__(self) -> None:
        self._claims = 0

    def oldest_first(self) -> bool:
        """Whether this claim ignores priorities: every `FAIR_SHARE`-th one (the count is per store object
        and its turns are not locked: two threads claiming at once may share a turn, which only moves it)."""
        self._claims += 1
        return self._claims % FAIR_SHARE == 0
