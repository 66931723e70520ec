"""An execution's badge and the line under it, drawn from its state (`console.states`, the one model).

A badge's `word` is the state (`running`, `waiting`, `parked` …): the CSS class and the list's filter word
for the same population, so a badge links to its kind. Its text reads the state with its qualifier
(`running·waiting`: alive, waiting for an input; `parked·stopped`: a stop nobody will run once resumed
until its version is served; `stopped·answered`: a person answered the stop, a resume is awaited, and its
colour is the answered node's). The line (`detail`) says why: a failure's kind then its message, a stop's
code then its reason, a cancel's reason. The list, the execution page, the parked page and the overview's
column heads all read it from here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from flowdeck.console import states
from flowdeck.console.states import ExecState, label_of
from flowdeck.store import spi

__all__ = ["Badge", "badge_of", "label_of"]


@dataclass(frozen=True)
class Badge:
    word: str  # the CSS class (st-<word>) and the filter word of the population
    text: str  # what the badge reads
    detail: str = ""  # the line beside it: kind then message, code then reason
    title: str = ""  # said on hover
    tone: str = ""  # its colour's word when not the state's (`answered`: a stop a person answered)

    @property
    def css(self) -> str:
        """The colour class's word: `st-<css>`."""
        return self.tone or self.word


def _cause(cause: spi.Cause | None) -> str:
    match cause:
        case spi.Failure(error, kind):
            return f"{kind}: {error}" if kind else error
        case spi.Cancellation(reason):
            return f"cancelled: {reason}" if reason else "cancelled"
    return ""


def detail_of(status: spi.Status, cancel_reason: str = "") -> str:
    """The line beside a badge: a failure's kind then message, a stop's code then reason, an unwind's
    cause, a cancel's reason."""
    match status:
        case spi.Failed(error, kind):
            return f"{kind}: {error}" if kind else error
        case spi.Cancelled(reason):
            return reason
        case spi.Stopped(code, _, reason, detail):
            return " ".join(p for p in (code, reason or detail) if p)
        case spi.Compensating(cause):
            return _cause(cause)
    return cancel_reason


def badge_of(state: spi.ExecutionState, served: Collection[str] | None = None) -> Badge:
    """The badge of `state`. With `served` (the version hashes some process serves), an unended execution
    of another version is `parked`; without it nothing is called parked."""
    standing = states.standing_of(state, served)
    word = standing.state.value
    cancel = state.cancel_reason if standing.state is ExecState.CANCELLING else ""
    detail = detail_of(state.status, cancel)
    if standing.state is ExecState.PARKED:
        return Badge(word, standing.text, detail, "its version is served by no process: nothing runs it")
    if standing.answered:  # said first: the stop is dealt with, only a resume is awaited
        return Badge(word, standing.text, f"{standing.note} — {detail}", standing.note, states.ANSWERED)
    title = detail if standing.state is ExecState.FAILED else ""
    return Badge(word, standing.text, detail, title)
