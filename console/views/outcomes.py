"""What the console's verbs say once they ran: words that tell what happened, not only that the click
arrived. A resume re-pins the execution and returns; the workers (another process) take it up after, so
what it came to is read from the history after the resume's own event, and said again as it changes (the
resume message is a live fragment of the execution page)."""

from __future__ import annotations

from dataclasses import dataclass

from flowdeck.console.views import common
from flowdeck.store import spi

__all__ = ["Said", "cancel_said", "resume_said", "resumed_seq"]


@dataclass(frozen=True)
class Said:
    level: str  # "ok" or "error": the message's colour
    text: str


def cancel_said(execution_id: str, outcome: spi.CancelOutcome) -> Said:
    match outcome:
        case spi.Accepted():
            return Said("ok", f"Cancel requested for {execution_id}: it runs its undos, then ends cancelled.")
        case spi.AlreadyRequested():
            return Said("ok", f"A cancel of {execution_id} was already requested; nothing more to do.")
        case spi.AlreadyTerminal(status):
            return Said("error", f"Not cancelled: {execution_id} had already ended ({_ended(status)}).")
    return Said("error", f"{execution_id}: the cancel answered {outcome!r}")


def resumed_seq(events: tuple[spi.Event, ...] | list[spi.Event]) -> int:
    """The seq of the newest Resumed event (0 when there is none)."""
    seqs = [e.seq for e in events if e.kind is spi.EventKind.RESUMED and e.seq is not None]
    return max(seqs, default=0)


def resume_said(state: spi.ExecutionState, since: int, events: list[spi.Event]) -> Said:
    """What the resume recorded at seq `since` came to, by the execution's state and the events after it."""
    after = [e for e in events if e.seq is not None and e.seq > since]
    status = state.status
    version = f"version {state.hash}"
    if isinstance(status, spi.Stopped) and any(e.kind is spi.EventKind.STOPPED for e in after):
        where = f"{status.code} at {status.node}" if status.node else status.code
        return Said("error", f"Resumed on {version}, and stopped again with {where}: {status.reason}")
    if isinstance(status, spi.Completed):
        return Said("ok", f"Resumed on {version}, and it completed.")
    if isinstance(status, spi.Failed):
        return Said("error", f"Resumed on {version}, and it failed: {_first_line(status.error)}")
    if isinstance(status, spi.Cancelled):
        return Said("ok", f"Resumed on {version}, then cancelled.")
    if not any(e.kind is spi.EventKind.EXECUTION_CLAIMED for e in after):
        return Said("ok", f"Resumed on {version}; waiting for a worker to take it up.")
    return Said("ok", f"Resumed on {version}; it is {common.badge_of(state)} now.")


def _ended(status: spi.Status) -> str:
    match status:
        case spi.Completed():
            return "completed"
        case spi.Failed(error=error):
            return f"failed: {_first_line(error)}"
        case spi.Cancelled():
            return "cancelled"
    return status.show()


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:200] + "…"
