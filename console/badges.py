"""The one status vocabulary of the console: what an execution's badge says, and the line under it.

A badge is the status plus its qualifier, in the filter words of the list (`store.filters`):
`running·waiting` (an input wait), `running·sleeping` (a timer), `cancelling` (asked, not ended), `parked`
(unended on a version no process serves: nobody will run it), then the statuses themselves. Its `word` is
the CSS class and the list's filter word for the same population, so a badge links to its kind. The line
(`detail`) says why: a failure's kind then its message, a stop's code then its reason, a cancel's reason.
The list, the execution page, the parked page and the overview's column heads all read it from here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from store import spi

__all__ = ["Badge", "badge_of", "label_of"]

SEP = "·"

# The heading a status word carries where only the word is known (the overview's columns, counts).
_LABELS = {
    "waiting": f"running{SEP}waiting",
    "sleeping": f"running{SEP}sleeping",
}


@dataclass(frozen=True)
class Badge:
    word: str  # the CSS class (st-<word>) and the filter word of the population
    text: str  # what the badge reads
    detail: str = ""  # the line beside it: kind then message, code then reason
    title: str = ""  # said on hover


def label_of(word: str) -> str:
    """What a badge of status word `word` reads (`waiting` → `running·waiting`)."""
    return _LABELS.get(word, word)


def _ended(status: spi.Status) -> Badge | None:
    match status:
        case spi.Completed():
            return Badge("completed", "completed")
        case spi.Failed(error, kind):
            line = f"{kind}: {error}" if kind else error
            return Badge("failed", "failed", line, line)
        case spi.Cancelled(reason):
            return Badge("cancelled", "cancelled", reason)
    return None


def _cause(cause: spi.Cause | None) -> str:
    match cause:
        case spi.Failure(error, kind):
            return f"{kind}: {error}" if kind else error
        case spi.Cancellation(reason):
            return f"cancelled: {reason}" if reason else "cancelled"
    return ""


def badge_of(state: spi.ExecutionState, served: Collection[str] | None = None) -> Badge:
    """The badge of `state`. With `served` (the version hashes some process serves), an unended execution
    of another version is `parked`; without it nothing is called parked."""
    status = state.status
    ended = _ended(status)
    if ended is not None:
        return ended
    parked = served is not None and state.hash not in served
    why = "its version is served by no process" if parked else ""
    if isinstance(status, spi.Stopped):
        detail = " ".join(p for p in (status.code, status.reason or status.detail) if p)
        return Badge("stopped", f"stopped{SEP}parked" if parked else "stopped", detail, why)
    if isinstance(status, spi.Compensating):
        text = f"compensating{SEP}parked" if parked else "compensating"
        return Badge("compensating", text, _cause(status.cause), why)
    if parked:
        return Badge("parked", "parked", "", why)
    if state.cancel_requested:
        return Badge("cancelling", "cancelling", state.cancel_reason)
    if any(isinstance(w, spi.WakeOnField) for w in state.waits.values()):
        return Badge("waiting", label_of("waiting"))
    if state.waits:
        return Badge("sleeping", label_of("sleeping"))
    return Badge("running", "running")
