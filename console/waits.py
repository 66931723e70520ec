"""What an execution waits for, read and written in one place for the API, the console's pages and the CLI.

A wait is one row of `ExecutionState.waits`: a person's input (`input_name`) or a deadline (`at`), listed
by path; a deadline that is a node's wait for its rate limit's token names the limit (`limit`) and reads
`rate-limited until …`. Each surface words it its own way, and those ways are kept here side by side:
the API's `kind`/`detail` (the deadline in ISO 8601), the pages' `words` (to the second) and the CLI's
`line` (to the minute, a deadline named by its node since a flow may sleep in several places at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from flowdeck.store import spi
from flowdeck.store.rate_limits import RATE_MARK

__all__ = ["Wait", "line", "waits_of"]


@dataclass(frozen=True)
class Wait:
    """One wait row: a person's input (`input_name`), or a deadline (`at`, for the countdown)."""

    path: str
    input_name: str | None
    at: datetime | None
    limit: str | None = None  # a rate limit's wait: the limit whose token is due at `at`

    @property
    def kind(self) -> Literal["sleeping", "waiting", "rate-limited"]:
        """The API's word: `waiting` for a person's input, `rate-limited` until a rate limit's token is
        due, `sleeping` until any other deadline."""
        if self.input_name is not None:
            return "waiting"
        return "rate-limited" if self.limit is not None else "sleeping"

    @property
    def detail(self) -> str:
        """The API's detail: the input's name, or the deadline in ISO 8601."""
        return self.input_name if self.input_name is not None else self._deadline.isoformat()

    @property
    def words(self) -> str:
        """The pages' words: `input NAME`, or `until YYYY-MM-DD HH:MM:SS`."""
        return self.written(seconds=True)

    def written(self, *, seconds: bool) -> str:
        """`input NAME`, or `until` the deadline to the second or to the minute (a rate limit's:
        `rate-limited (LIMIT) until …`)."""
        if self.input_name is not None:
            return f"input {self.input_name}"
        shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
        until = f"until {self._deadline:{shape}}"
        return f"rate-limited ({self.limit}) {until}" if self.limit is not None else until

    @property
    def node(self) -> str:
        """The node that waits: the path, less a rate limit's mark."""
        return self.path.rpartition(RATE_MARK)[0] if self.limit is not None else self.path

    @property
    def _deadline(self) -> datetime:
        assert self.at is not None, "a wait is an input or a deadline"
        return self.at


def waits_of(state: spi.ExecutionState) -> tuple[Wait, ...]:
    """The execution's waits, by path."""
    found = []
    for path, wake in sorted(state.waits.items()):
        if isinstance(wake, spi.WakeOnField):
            found.append(Wait(path, wake.name, None))
        else:
            node, mark, limit = path.rpartition(RATE_MARK)
            found.append(Wait(path, None, wake.at, limit if mark and node else None))
    return tuple(found)


def line(state: spi.ExecutionState) -> str:
    """The CLI's one line: `input NAME` or `PATH until YYYY-MM-DD HH:MM` for each wait, comma-separated."""
    return ", ".join(
        wait.written(seconds=False)
        if wait.input_name is not None
        else f"{wait.node} {wait.written(seconds=False)}"
        for wait in waits_of(state)
    )
