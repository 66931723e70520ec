"""What an execution waits for, read and written in one place for the API, the console's pages and the CLI.

A wait is one row of `ExecutionState.waits`: a person's input (`input_name`) or a deadline (`at`), listed
by path. Each surface words it its own way, and those ways are kept here side by side: the API's
`kind`/`detail` (the deadline in ISO 8601), the pages' `words` (to the second) and the CLI's `line` (to the
minute, a deadline named by its path since a flow may sleep in several places at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from flowdeck.store import spi

__all__ = ["Wait", "line", "waits_of"]


@dataclass(frozen=True)
class Wait:
    """One wait row: a person's input (`input_name`), or a deadline (`at`, for the countdown)."""

    path: str
    input_name: str | None
    at: datetime | None

    @property
    def kind(self) -> Literal["sleeping", "waiting"]:
        """The API's word: `waiting` for a person's input, `sleeping` until a deadline."""
        return "waiting" if self.input_name is not None else "sleeping"

    @property
    def detail(self) -> str:
        """The API's detail: the input's name, or the deadline in ISO 8601."""
        return self.input_name if self.input_name is not None else self._deadline.isoformat()

    @property
    def words(self) -> str:
        """The pages' words: `input NAME`, or `until YYYY-MM-DD HH:MM:SS`."""
        return self.written(seconds=True)

    def written(self, *, seconds: bool) -> str:
        """`input NAME`, or `until` the deadline to the second or to the minute."""
        if self.input_name is not None:
            return f"input {self.input_name}"
        shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
        return f"until {self._deadline:{shape}}"

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
            found.append(Wait(path, None, wake.at))
    return tuple(found)


def line(state: spi.ExecutionState) -> str:
    """The CLI's one line: `input NAME` or `PATH until YYYY-MM-DD HH:MM` for each wait, comma-separated."""
    return ", ".join(
        wait.written(seconds=False)
        if wait.input_name is not None
        else f"{wait.path} {wait.written(seconds=False)}"
        for wait in waits_of(state)
    )
