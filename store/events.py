"""An execution's history: the event kinds, one event with its payload and its one-line detail, a page."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class EventKind(enum.StrEnum):
    # the 23 kinds of kyo-flow
    CREATED = "Created"
    STEP_STARTED = "StepStarted"
    STEP_COMPLETED = "StepCompleted"
    STEP_FAILED = "StepFailed"
    STEP_RETRIED = "StepRetried"
    STEP_TIMED_OUT = "StepTimedOut"
    INPUT_WAITING = "InputWaiting"
    INPUT_RECEIVED = "InputReceived"
    INPUT_DISCHARGED = "InputDischarged"
    INPUT_SUPPLIED = "InputSupplied"
    SLEEP_STARTED = "SleepStarted"
    SLEEP_COMPLETED = "SleepCompleted"
    BRANCH_CHOSEN = "BranchChosen"
    EXECUTION_RESUMED = "ExecutionResumed"
    EXECUTION_CLAIMED = "ExecutionClaimed"
    EXECUTION_RELEASED = "ExecutionReleased"
    COMPLETED = "Completed"
    FAILED = "Failed"
    COMPENSATION_STARTED = "CompensationStarted"
    COMPENSATION_COMPLETED = "CompensationCompleted"
    COMPENSATION_FAILED = "CompensationFailed"
    NODE_COMPENSATED = "NodeCompensated"
    CANCELLED = "Cancelled"
    # Flowdeck's own
    CANCEL_REQUESTED = "CancelRequested"
    STOPPED = "Stopped"
    RESUMED = "Resumed"
    ANSWERED = "Answered"
    ENDED = "Ended"
    UNDO_NOTED = "UndoNoted"
    RATE_LIMITED = "RateLimited"  # a node's rate limit was spent: it waits for its token (`until`)


# The payload key whose value is an event's `detail`, for kinds whose detail is one field.
_DETAIL_KEY: dict[EventKind, str] = {
    EventKind.STEP_STARTED: "step_name",
    EventKind.STEP_COMPLETED: "step_name",
    EventKind.STEP_TIMED_OUT: "step_name",
    EventKind.INPUT_WAITING: "input_name",
    EventKind.INPUT_RECEIVED: "input_name",
    EventKind.INPUT_DISCHARGED: "input_name",
    EventKind.INPUT_SUPPLIED: "input_name",
    EventKind.SLEEP_STARTED: "step_name",
    EventKind.SLEEP_COMPLETED: "step_name",
    EventKind.FAILED: "error",
    EventKind.COMPENSATION_FAILED: "error",
    EventKind.NODE_COMPENSATED: "node_name",
    EventKind.CANCELLED: "reason",
    EventKind.CANCEL_REQUESTED: "reason",
    EventKind.ANSWERED: "node",
    EventKind.ENDED: "reason",
    EventKind.UNDO_NOTED: "node",
}


@dataclass(frozen=True)
class Event:
    """One entry of an execution's history.

    `data` holds the kind's payload (JSON-native values, snake_case keys as in spec §3.1: `step_name`,
    `executor_id`, `error`, `error_kind`, `attempt`, `delay` (seconds), `timeout` (seconds), `input_name`,
    `until` (ISO instant), `dispatch_name`, `branch_name`, `cause`, `node_name`, plus Flowdeck's `reason`,
    `actor`, `code`, `node`, `from_hash`, `to_hash`, `handler`, and a loop's StepCompleted `iterations`). A
    payload may carry keys beyond its kind's: readers take what they know and leave the rest. `seq` is the
    event's position in its execution's history (1-based), assigned by the store; None on an event not yet
    stored.
    """

    kind: EventKind
    flow_id: str
    execution_id: str
    timestamp: datetime
    data: Mapping[str, Any] = field(default_factory=dict)
    seq: int | None = field(default=None, compare=False)

    @property
    def detail(self) -> str:
        d = self.data
        match self.kind:
            case EventKind.STEP_FAILED:
                return f"{d.get('step_name', '')} ({d.get('error', '')})"
            case EventKind.STEP_RETRIED:
                return f"{d.get('step_name', '')} (attempt {d.get('attempt', 0)}: {d.get('error', '')})"
            case EventKind.BRANCH_CHOSEN:
                return f"{d.get('dispatch_name', '')} ({d.get('branch_name', '')})"
            case EventKind.STOPPED:
                return f"{d.get('code', '')} at {d.get('node', '')}: {d.get('reason', '')}"
            case EventKind.RATE_LIMITED:
                return f"{d.get('step_name', '')} ({d.get('limit', '')} until {d.get('until', '')})"
            case EventKind.RESUMED:
                return f"{d.get('from_hash', '')} -> {d.get('to_hash', '')}"
        key = _DETAIL_KEY.get(self.kind)
        return str(d.get(key, "")) if key else ""

    def with_seq(self, seq: int) -> Event:
        return Event(self.kind, self.flow_id, self.execution_id, self.timestamp, self.data, seq)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "flow_id": self.flow_id,
            "execution_id": self.execution_id,
            "timestamp": self.timestamp.isoformat(),
            "data": dict(self.data),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], seq: int | None = None) -> Event:
        return cls(
            EventKind(data["kind"]),
            data["flow_id"],
            data["execution_id"],
            datetime.fromisoformat(data["timestamp"]),
            data.get("data", {}),
            seq,
        )

    def data_json(self) -> str:
        data = self.data
        return encode_data(data if type(data) is dict else dict(data))


encode_data = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode
"""An event's payload as stored; one encoder for all (json.dumps with options builds one per call)."""


@dataclass(frozen=True)
class HistoryPage:
    events: Sequence[Event]
    has_more: bool
