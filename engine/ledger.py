"""What an attempt's history says, derived once at the attempt's start (spec §5.2 step 6): the nodes
completed and compensated, the retries counted, each node's last step event, each sleep's first deadline,
and which rate limits' reservations a start has spent since (`rate_limits.admit` takes a new token for a
node re-run after its start, instead of running twice on one token).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from flowdeck.store import spi
from flowdeck.store.rate_limits import rate_row

__all__ = ["Ledger"]


@dataclass
class Ledger:
    """What history says, derived once per attempt (spec §5.2 step 6)."""

    completed: set[str] = field(default_factory=set)
    compensated: set[str] = field(default_factory=set)
    retried: Counter[str] = field(default_factory=Counter)
    last_step_event: dict[str, spi.EventKind] = field(default_factory=dict)
    # each sleep's first deadline, so a sleep whose row was retired (by a stop) keeps it on resume
    sleep_until: dict[str, datetime] = field(default_factory=dict)
    # rate limits' rows whose reservation a start has spent since (`rate_limits.admit` takes anew)
    spent: set[str] = field(default_factory=set)
    reserved: dict[str, str] = field(default_factory=dict)  # node -> its reservation's row, not started on

    @classmethod
    def of(cls, history: Iterable[spi.Event]) -> Ledger:
        ledger = cls()
        kind = spi.EventKind
        for event in history:
            data = event.data
            match event.kind:
                case kind.STEP_COMPLETED | kind.SLEEP_COMPLETED:
                    ledger.completed.add(data.get("step_name", ""))
                case kind.INPUT_DISCHARGED | kind.INPUT_SUPPLIED:
                    ledger.completed.add(data.get("input_name", ""))
                case kind.ANSWERED:
                    ledger.completed.add(data.get("node", ""))
                case kind.NODE_COMPENSATED:
                    ledger.compensated.add(data.get("node_name", ""))
                case kind.STEP_RETRIED:
                    ledger.retried[data.get("step_name", "")] += 1
                case kind.SLEEP_STARTED if "until" in data:
                    ledger.sleep_until.setdefault(
                        data.get("step_name", ""), datetime.fromisoformat(data["until"])
                    )
            if event.kind is kind.RATE_LIMITED or (ledger.reserved and event.kind is kind.STEP_STARTED):
                ledger.note_reservation(event)  # only then: most histories use no rate limit
            if event.kind in (kind.STEP_STARTED, kind.STEP_COMPLETED, kind.STEP_RETRIED, kind.STEP_FAILED):
                ledger.last_step_event[data.get("step_name", "")] = event.kind
            elif event.kind is kind.ANSWERED:
                ledger.last_step_event[data.get("node", "")] = event.kind
        return ledger

    def note_reservation(self, event: spi.Event) -> None:
        """A RateLimited event reserves its row's token; the node's next StepStarted spends it."""
        step = event.data.get("step_name", "")
        if event.kind is spi.EventKind.RATE_LIMITED:
            row = rate_row(step, event.data.get("limit", ""))
            self.reserved[step] = row
            self.spent.discard(row)
        elif event.kind is spi.EventKind.STEP_STARTED and step in self.reserved:
            self.spent.add(self.reserved.pop(step))
