"""The store contract: every backend implements `FlowStore` and `Claimed`, and honours I1–I9.

The store, not the engine, decides. Every verb answers with what it did (an outcome value) rather than
raising; only a backend failure raises, as `FlowStoreError`.

The nine invariants (kyo-flow's, kept word for word in meaning):

- I1 `claim_ready` never hands the same execution to two concurrent callers.
- I2 A transition writes its status, its events and its ledger change (fields, wait rows, progress marks)
  in one transaction; no reader ever sees one without the others.
- I3 `signal` is an atomic check-and-write against both the field and the lifecycle: exactly one delivery of
  a name wins, and one arriving after the execution finished is refused.
- I4 A renewal succeeds only on an active, unexpired claim whose token is the one presented.
- I5 A terminal status (Completed, Failed, Cancelled) never reverts.
- I6 Read-your-writes within one caller.
- I7 `get_history` answers events in append order.
- I8 `claim_ready` hands out an execution exactly when it is not terminal and not Stopped, its claim is free
  or expired, the caller serves its `(flow_id, hash)`, and any of: a cancel request is outstanding, it has no
  wait rows, one of its rows is satisfied, or its claim is active and expired (it died mid-flight).
- I9 A claimed row records who holds it, until when and under which token; the token is strictly greater
  than any that row carried before. The executor id is for reporting and is never a write authority.

The acceptance rule for every write through a `Claimed` handle: it applies only if the row's claim token is
the presented one AND the store's clock is before the claim's expiry. A refused write changes nothing.

Flowdeck additions to the kyo-flow contract: the `Stopped` status (never claimed, moved only by an operator),
cancellation with a reason, the operator writes `resume`, `answer` and `end`, an id-prefix and a total on
`list_executions`, numbered history events, workflow versions, and two cost-rule affordances: every
`Claimed` write takes `preceding` events written in the same transaction, and every accepted write refreshes
`Claimed.cancel_requested` from the row it just wrote, so the engine's cancellation check costs no read.
"""

from __future__ import annotations

import abc
import enum
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict

from store import counts, feed, heartbeats

__all__ = [
    "AlreadyDelivered",
    "AlreadyRequested",
    "AlreadyTerminal",
    "Accepted",
    "Cancellation",
    "CancelOutcome",
    "Cancelled",
    "Cause",
    "Claimed",
    "ClaimOutcome",
    "Compensating",
    "Completed",
    "Delivered",
    "Event",
    "EventKind",
    "ExecutionFilter",
    "ExecutionPage",
    "ExecutionState",
    "Failed",
    "Failure",
    "FieldData",
    "FilterParseError",
    "FlowStore",
    "FlowStoreError",
    "HistoryPage",
    "InputInfo",
    "NodeInfo",
    "OperatorOutcome",
    "ProgressOutcome",
    "Running",
    "SignalOutcome",
    "Status",
    "StatusOutcome",
    "Stop",
    "Stopped",
    "Suspended",
    "Terminal",
    "Wake",
    "WakeAt",
    "WakeOnField",
    "WorkflowInfo",
    "WorkflowMeta",
    "WriteOutcome",
]


# --------------------------------------------------------------------------------------------- errors


class FlowStoreError(Exception):
    """The store could not be reached or could not complete an operation.

    Not a verdict on any execution: the engine abandons the attempt and leaves the execution claimable.
    `retryable` is true when the failure is transient (connection lost, serialization failure, deadlock).
    Backends translate driver errors into this once, at their boundary, keeping `__cause__`.
    """

    def __init__(self, message: str = "", *, retryable: bool = False) -> None:
        super().__init__(message or (self.__doc__ or "").strip().splitlines()[0])
        self.retryable = retryable


# --------------------------------------------------------------------------------------- status, cause


@dataclass(frozen=True)
class Failure:
    """An unwind caused by a failure: `error` is the message, `kind` the exception's class name if typed."""

    error: str
    kind: str | None = None


@dataclass(frozen=True)
class Cancellation:
    """An unwind caused by a cancel request, with the requester's reason."""

    reason: str = ""


Cause: TypeAlias = Failure | Cancellation


@dataclass(frozen=True)
class Running:
    """Working or waiting (waiting is not a status: the wait rows say what for)."""

    terminal: ClassVar[bool] = False

    def show(self) -> str:
        return "running"


@dataclass(frozen=True)
class Completed:
    terminal: ClassVar[bool] = True

    def show(self) -> str:
        return "completed"


@dataclass(frozen=True)
class Failed:
    """Ended by a failure. `kind` is the domain error's class name, None for an untyped failure."""

    error: str
    kind: str | None = None
    terminal: ClassVar[bool] = True

    def show(self) -> str:
        return f"failed:{self.error}"


@dataclass(frozen=True)
class Compensating:
    """Running its compensations and undos, most recent first; the cause decides the terminal status."""

    cause: Cause
    terminal: ClassVar[bool] = False

    def show(self) -> str:
        return "compensating"


@dataclass(frozen=True)
class Cancelled:
    reason: str = ""
    terminal: ClassVar[bool] = True

    def show(self) -> str:
        return "cancelled"


@dataclass(frozen=True)
class Stopped:
    """Waiting for a person (qoqi's stopped instance). Not terminal, never claimed.

    `code` is a stable stop code (F0001 …), `node` the durable path it stopped at, `reason` a one-line
    message, `detail` the traceback or longer explanation. `cause` is kept when the stop happened inside an
    unwind (F0002), so that a resume continues the unwind.
    """

    code: str
    node: str = ""
    reason: str = ""
    detail: str = ""
    cause: Cause | None = None
    terminal: ClassVar[bool] = False

    def show(self) -> str:
        return f"stopped:{self.code}"


Status: TypeAlias = Running | Completed | Failed | Compensating | Cancelled | Stopped


def cause_to_json(cause: Cause) -> dict[str, Any]:
    if isinstance(cause, Failure):
        return {"type": "failure", "error": cause.error, "kind": cause.kind}
    return {"type": "cancellation", "reason": cause.reason}


def cause_from_json(data: Mapping[str, Any]) -> Cause:
    if data["type"] == "failure":
        return Failure(data["error"], data.get("kind"))
    return Cancellation(data.get("reason", ""))


def status_to_json(status: Status) -> dict[str, Any]:
    """The one JSON shape of a status, used by every backend and the wire."""
    match status:
        case Running():
            return {"type": "running"}
        case Completed():
            return {"type": "completed"}
        case Failed(error, kind):
            return {"type": "failed", "error": error, "kind": kind}
        case Compensating(cause):
            return {"type": "compensating", "cause": cause_to_json(cause)}
        case Cancelled(reason):
            return {"type": "cancelled", "reason": reason}
        case Stopped(code, node, reason, detail, cause):
            return {
                "type": "stopped",
                "code": code,
                "node": node,
                "reason": reason,
                "detail": detail,
                "cause": cause_to_json(cause) if cause else None,
            }
    raise TypeError(f"not a status: {status!r}")


def status_from_json(data: Mapping[str, Any]) -> Status:
    match data["type"]:
        case "running":
            return Running()
        case "completed":
            return Completed()
        case "failed":
            return Failed(data["error"], data.get("kind"))
        case "compensating":
            return Compensating(cause_from_json(data["cause"]))
        case "cancelled":
            return Cancelled(data.get("reason", ""))
        case "stopped":
            cause = data.get("cause")
            return Stopped(
                data["code"],
                data.get("node", ""),
                data.get("reason", ""),
                data.get("detail", ""),
                cause_from_json(cause) if cause else None,
            )
    raise ValueError(f"unknown status type {data['type']!r}")


# ------------------------------------------------------------------------------------------------ waits


@dataclass(frozen=True)
class WakeAt:
    """A sleep's row: satisfied once the store's clock reaches `at`."""

    at: datetime


@dataclass(frozen=True)
class WakeOnField:
    """An input's row: satisfied once the field `name` exists."""

    name: str


Wake: TypeAlias = WakeAt | WakeOnField


def wake_to_json(wake: Wake) -> dict[str, Any]:
    if isinstance(wake, WakeAt):
        return {"type": "at", "at": wake.at.isoformat()}
    return {"type": "on_field", "name": wake.name}


def wake_from_json(data: Mapping[str, Any]) -> Wake:
    if data["type"] == "at":
        return WakeAt(datetime.fromisoformat(data["at"]))
    return WakeOnField(data["name"])


# ----------------------------------------------------------------------------------------------- events


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
    `actor`, `code`, `node`, `from_hash`, `to_hash`, `handler`). `seq` is the event's position in its
    execution's history (1-based), assigned by the store; None on an event not yet stored.
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
        return json.dumps(dict(self.data), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class HistoryPage:
    events: Sequence[Event]
    has_more: bool


# ----------------------------------------------------------------------------------------------- fields


@dataclass(frozen=True)
class FieldData:
    """A recorded value: JSON text beside the name of its declared type. Written once, then it stands."""

    value: str
    tag: str

    @classmethod
    def of(cls, value: Any, tag: str) -> FieldData:
        """Encode a JSON-native value."""
        return cls(json.dumps(value, separators=(",", ":"), sort_keys=True), tag)

    def decode(self) -> Any:
        return json.loads(self.value)


# ------------------------------------------------------------------------------------------- executions


@dataclass(frozen=True, eq=True)
class ExecutionState:
    """One execution's row: lifecycle, claim, version, wait rows and cancel flag, with no ledger read.

    Equality is structural; the waits mapping compares and hashes independently of insertion order.
    """

    execution_id: str
    flow_id: str
    status: Status
    executor: str | None
    claim_expiry: datetime | None
    hash: str
    created: datetime
    updated: datetime
    waits: Mapping[str, Wake]
    cancel_requested: bool
    claim_token: int | None
    cancel_reason: str = ""

    def __hash__(self) -> int:
        waits_hash = sum(hash(item) for item in self.waits.items())
        return hash(
            (
                self.execution_id,
                self.flow_id,
                self.status,
                self.executor,
                self.claim_expiry,
                self.hash,
                self.created,
                self.updated,
                waits_hash,
                self.cancel_requested,
                self.claim_token,
                self.cancel_reason,
            )
        )


@dataclass(frozen=True)
class ExecutionPage:
    """A page of `list_executions`: newest created first; `total` counts every match, not the page."""

    items: Sequence[ExecutionState]
    total: int


class FilterParseError(ValueError):
    """A wire filter string that names no filter (or an empty narrowing like `failed:`)."""


class ExecutionFilter:
    """What an operator searches executions by. Not the lifecycle: it includes waits and cancel requests.

    A wait-kind arm matches when ANY of the execution's rows does.
    """

    @dataclass(frozen=True)
    class Running:
        pass

    @dataclass(frozen=True)
    class Completed:
        pass

    @dataclass(frozen=True)
    class Cancelled:
        pass

    @dataclass(frozen=True)
    class Compensating:
        """Unwinding, whatever the cause."""

    @dataclass(frozen=True)
    class Failed:
        """Every failure when `kind` is None, else those whose kind is exactly `kind`."""

        kind: str | None = None

    @dataclass(frozen=True)
    class Sleeping:
        """Has any `WakeAt` row."""

    @dataclass(frozen=True)
    class WaitingForInput:
        """Has any `WakeOnField` row, or the one for input `name`."""

        name: str | None = None

    @dataclass(frozen=True)
    class Cancelling:
        """A cancel was requested and the execution has not ended."""

    @dataclass(frozen=True)
    class Orphaned:
        """Not terminal, and its hash is not among `served_hashes` (held by a version no engine serves)."""

        served_hashes: frozenset[str]

    @dataclass(frozen=True)
    class Stopped:
        """Stopped for a person; with `code`, only that stop code."""

        code: str | None = None

    Any: ClassVar[TypeAlias] = (
        Running
        | Completed
        | Cancelled
        | Compensating
        | Failed
        | Sleeping
        | WaitingForInput
        | Cancelling
        | Orphaned
        | Stopped
    )

    WIRE_WORDS: ClassVar[tuple[str, ...]] = (
        "running",
        "completed",
        "cancelled",
        "cancelling",
        "compensating",
        "failed",
        "failed:<kind>",
        "sleeping",
        "waiting",
        "waiting:<name>",
        "stopped",
        "stopped:<code>",
    )

    @classmethod
    def parse(cls, wire: str) -> ExecutionFilter.Any:
        """Parse the wire vocabulary; an unknown word or an empty narrowing raises `FilterParseError`.

        `Orphaned` has no spelling on purpose: its parameter is one engine's served set.
        """
        simple: dict[str, ExecutionFilter.Any] = {
            "running": cls.Running(),
            "completed": cls.Completed(),
            "cancelled": cls.Cancelled(),
            "cancelling": cls.Cancelling(),
            "compensating": cls.Compensating(),
            "failed": cls.Failed(),
            "sleeping": cls.Sleeping(),
            "waiting": cls.WaitingForInput(),
            "stopped": cls.Stopped(),
        }
        if wire in simple:
            return simple[wire]
        for prefix, make in (
            ("failed:", cls.Failed),
            ("waiting:", cls.WaitingForInput),
            ("stopped:", cls.Stopped),
        ):
            if wire.startswith(prefix):
                rest = wire[len(prefix) :]
                if not rest:
                    raise FilterParseError(f"{wire!r} narrows to nothing: give a value after the colon")
                return make(rest)
        raise FilterParseError(
            f"unknown status filter {wire!r}; expected one of: {', '.join(cls.WIRE_WORDS)}"
        )


def filter_matches(filt: ExecutionFilter.Any, state: ExecutionState) -> bool:
    """The reference meaning of each filter arm (the memory store uses it; SQL stores mirror it)."""
    status = state.status
    match filt:
        case ExecutionFilter.Running():
            return isinstance(status, Running)
        case ExecutionFilter.Completed():
            return isinstance(status, Completed)
        case ExecutionFilter.Cancelled():
            return isinstance(status, Cancelled)
        case ExecutionFilter.Compensating():
            return isinstance(status, Compensating)
        case ExecutionFilter.Failed(kind):
            return isinstance(status, Failed) and (kind is None or status.kind == kind)
        case ExecutionFilter.Sleeping():
            return any(isinstance(w, WakeAt) for w in state.waits.values())
        case ExecutionFilter.WaitingForInput(name):
            return any(
                isinstance(w, WakeOnField) and (name is None or w.name == name) for w in state.waits.values()
            )
        case ExecutionFilter.Cancelling():
            return state.cancel_requested and not status.terminal
        case ExecutionFilter.Orphaned(served):
            return not status.terminal and state.hash not in served
        case ExecutionFilter.Stopped(code):
            return isinstance(status, Stopped) and (code is None or status.code == code)
    raise TypeError(f"not a filter: {filt!r}")


# --------------------------------------------------------------------------------------------- outcomes


class WriteOutcome(enum.Enum):
    APPLIED = "applied"
    CLAIM_LOST = "claim-lost"


class StatusOutcome(enum.Enum):
    """What a status write or an ending did. CANCEL_REQUESTED: `finish(Terminal(Completed))` found a cancel
    request outstanding and wrote nothing (the claim is kept and the handle's cancel flag and reason are
    refreshed); the attempt unwinds as `Compensating(Cancellation)` and ends `Cancelled` instead."""

    APPLIED = "applied"
    CLAIM_LOST = "claim-lost"
    WRONG_SIDE_OF_TERMINAL = "wrong-side-of-terminal"
    CANCEL_REQUESTED = "cancel-requested"


class ProgressOutcome(enum.Enum):
    RECORDED = "recorded"
    ALREADY_RECORDED = "already-recorded"
    CLAIM_LOST = "claim-lost"


@dataclass(frozen=True)
class Delivered:
    pass


@dataclass(frozen=True)
class AlreadyDelivered:
    pass


@dataclass(frozen=True)
class Accepted:
    pass


@dataclass(frozen=True)
class AlreadyRequested:
    pass


@dataclass(frozen=True)
class AlreadyTerminal:
    """The execution had already ended as `status` (a missing execution answers `Cancelled()`)."""

    status: Status


SignalOutcome: TypeAlias = Delivered | AlreadyDelivered | AlreadyTerminal
CancelOutcome: TypeAlias = Accepted | AlreadyRequested | AlreadyTerminal


class OperatorOutcome(enum.Enum):
    """What an operator write (`resume`, `answer`, `end`) did.

    APPLIED: done. ALREADY_RECORDED: `answer` found the node already recorded. NOT_STOPPED: the verb needs
    a Stopped execution and this one is not. CLAIM_HELD: a worker holds a live claim on it, so a person may
    not change it under that worker's feet. ALREADY_TERMINAL: it has ended. NOT_FOUND: no such execution.
    """

    APPLIED = "applied"
    ALREADY_RECORDED = "already-recorded"
    NOT_STOPPED = "not-stopped"
    CLAIM_HELD = "claim-held"
    ALREADY_TERMINAL = "already-terminal"
    NOT_FOUND = "not-found"


@dataclass(frozen=True)
class Terminal:
    """End the attempt and the execution: writes a terminal status and its event, retires every wait row."""

    status: Status
    event: Event


@dataclass(frozen=True)
class Suspended:
    """End the attempt, keeping exactly the wait rows named in `waiting_on` (the rest are retired)."""

    waiting_on: frozenset[str]


@dataclass(frozen=True)
class Stop:
    """End the attempt by stopping the execution for a person: writes a `Stopped` status and its event and
    retires every wait row (a stopped execution waits for a person, not for inputs or sleeps; the replay
    after a resume records again what it still waits for, a sleep keeping its first deadline)."""

    status: Stopped
    event: Event


ClaimOutcome: TypeAlias = Terminal | Suspended | Stop


# ------------------------------------------------------------------------------------ workflow metadata


class WorkflowMeta(BaseModel):
    """A flow's or a node's knobs, as metadata (timeouts in seconds, the retry schedule described)."""

    model_config = ConfigDict(frozen=True)

    description: str = ""
    tags: tuple[str, ...] = ()
    timeout: float | None = None
    retry: str | None = None
    version: str = ""


class NodeInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    node_type: str  # output, input, step, sleep, dispatch, loop, foreach, subflow (and race/zip forks)
    tag: str
    location: str = ""
    meta: WorkflowMeta = WorkflowMeta()


class InputInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    tag: str
    json_schema: dict[str, Any] = {}


class WorkflowInfo(BaseModel):
    """A registered workflow version: what a console, an API client or another language needs to know."""

    model_config = ConfigDict(frozen=True)

    id: str
    meta: WorkflowMeta = WorkflowMeta()
    nodes: tuple[NodeInfo, ...] = ()
    inputs: tuple[InputInfo, ...] = ()
    outputs: tuple[str, ...] = ()
    structural_hash: str


# ------------------------------------------------------------------------------------------------ SPI


class Claimed(abc.ABC):
    """The handle `claim_ready` hands back: every write made while running an execution goes through it,
    and is judged against the claim token it carries (the acceptance rule in the module docstring).

    Every write takes `preceding`: events appended, in order, before the write's own event, in the same
    transaction. That is how the engine records a node's start, its value and the next boundary in one
    round trip.
    """

    @property
    @abc.abstractmethod
    def state(self) -> ExecutionState:
        """The row as it was when claimed."""

    @property
    @abc.abstractmethod
    def satisfied(self) -> frozenset[str]:
        """The paths of the wait rows the store judged satisfied when it granted this claim."""

    @property
    @abc.abstractmethod
    def cancel_requested(self) -> bool:
        """Whether a cancel was requested, as of this handle's latest accepted write (or the claim)."""

    @property
    @abc.abstractmethod
    def cancel_reason(self) -> str:
        """The reason given with the cancel request, as of this handle's latest accepted write."""

    @abc.abstractmethod
    async def append_event(self, event: Event, *, preceding: Sequence[Event] = ()) -> WriteOutcome:
        """Append to history under the claim."""

    @abc.abstractmethod
    async def record_wait(
        self, path: str, wake: Wake, event: Event, *, preceding: Sequence[Event] = ()
    ) -> WriteOutcome:
        """Put-if-absent the wait row at `path` (an existing row keeps its wake, so a replayed sleep keeps
        its deadline) and append the event either way. The claim is not released."""

    @abc.abstractmethod
    async def renew_claim(self, lease: timedelta) -> bool:
        """Extend the expiry to the store's now + lease (I4). False if the claim is no longer this one's."""

    @abc.abstractmethod
    async def update_status(
        self, status: Status, event: Event, *, preceding: Sequence[Event] = ()
    ) -> StatusOutcome:
        """Write a non-terminal status (and its event). A terminal one is refused with
        WRONG_SIDE_OF_TERMINAL and nothing written; so is any write to a row already terminal (I5)."""

    @abc.abstractmethod
    async def record_progress(
        self,
        path: str,
        value: FieldData | None,
        event: Event,
        *,
        preceding: Sequence[Event] = (),
        extra_fields: Mapping[str, FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> ProgressOutcome:
        """In one transition: write the field at `path` (when a value is given), the `extra_fields` (each
        only if absent; used for undo notes kept with a step's result), append the events, and retire the
        wait row at `path`. `clear_cancel` also withdraws the cancel request (flag and reason): a flow that
        listened for cancellation (`on_cancel`) heard it and goes on its own way.

        Write-once per path, split by what the write carries: a value-carrying write is refused
        (ALREADY_RECORDED, nothing written) when a field already sits at `path`; a valueless write is
        refused only when a valueless progress already landed at `path`, so the store keeps a separate set
        of valueless-progress paths per execution."""

    @abc.abstractmethod
    async def finish(self, outcome: ClaimOutcome, *, preceding: Sequence[Event] = ()) -> StatusOutcome:
        """End the attempt; the only verb that makes the claim absent (clears executor, expiry, token).

        `Terminal` needs a terminal status (else WRONG_SIDE_OF_TERMINAL, nothing written, claim kept) and
        retires every wait row; `Suspended` writes no status and keeps exactly the named rows; `Stop` writes
        a `Stopped` status and retires every row.

        I2 for cancellation: `Terminal(Completed)` is refused with CANCEL_REQUESTED (nothing written, claim
        kept, `cancel_requested`/`cancel_reason` refreshed) when the row carries a cancel request, judged
        in the same atomic write as the ending itself, so a request answered Accepted can never be followed
        by Completed. Every other ending lands whatever the flag says (Cancelled and Failed end an unwind;
        Suspended leaves the row ready for the unwind, I8)."""

    async def prefetched_ledger(self) -> tuple[Mapping[str, FieldData], Sequence[Event]] | None:
        """The execution's fields and full history as they stood when the claim was granted, if the store
        read them in the claim's own round trip; None (the default) when it did not, and the engine reads
        them with `get_all_fields` and `get_history`. Cost rule: an attempt then starts with no read of its
        own. Not abstract: a store that does not prefetch need not override it."""
        return None


class FlowStore(abc.ABC):
    """Where executions live. Readers and the writes anybody may make; running writes are on `Claimed`."""

    @abc.abstractmethod
    async def claim_ready(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        lease: timedelta,
        limit: int,
        timeout: timedelta,
    ) -> Sequence[Claimed]:
        """Claim up to `limit` ready executions (I8) of the served `(flow_id, hash)` pairs, oldest created
        first, each under a fresh token (I9) expiring at the store's now + lease (I1: never the same row to
        two callers).

        Blocks up to `timeout` (on monotonic time) while nothing is ready; any write that could make a row
        ready wakes every blocked caller; a write made before the call began does not. An empty answer is
        never proof that nothing happened: at the deadline the store asks once more, since a sleep can come
        due and a lease can lapse with no write."""

    @abc.abstractmethod
    async def create_execution_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: Status,
        event: Event,
        fields: Mapping[str, FieldData] | None = None,
    ) -> bool:
        """Create the row, its Created event and its seed fields in one transition. An existing id is left
        untouched (history included) and answers False."""

    @abc.abstractmethod
    async def create_claimed_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: Status,
        event: Event,
        fields: Mapping[str, FieldData] | None = None,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> Claimed | None:
        """`create_execution_if_absent`, with the new row already claimed by `executor_id`: in the same one
        transition the row carries a fresh token (I9) expiring at the store's now + lease. Answers the claim
        handle, whose `prefetched_ledger()` is the seed fields and [the Created event, seq 1] (the store
        knows them without a read), or None when the id exists (nothing touched, history included).

        For a process that runs the execution itself at once (its own worker pool): no `claim_ready` poll
        is needed, and none is woken, since nobody else may claim the row while the lease holds. Once the
        lease lapses with no renewal the row is ready like any claim that died mid-flight (I8): a poll that
        asks finds it, a blocked one when it next asks (its deadline, or its own wake-up at the earliest
        lease expiry it knows of)."""

    @abc.abstractmethod
    async def signal(self, execution_id: str, name: str, value: FieldData, event: Event) -> SignalOutcome:
        """Deliver an input (I3): Delivered once per name; AlreadyDelivered (value kept) after that;
        AlreadyTerminal(status) on an ended execution, writing nothing; a missing execution answers
        AlreadyTerminal(Cancelled())."""

    @abc.abstractmethod
    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: FieldData,
        event: Event,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> tuple[SignalOutcome, Claimed | None]:
        """`signal`, with the row claimed by `executor_id` in the same one transition when the delivery
        makes it ready for that executor: the answer is Delivered, a wait row of the execution waits on
        field `name`, its status is claimable (running or compensating: never Stopped nor ended) and no
        live claim holds it (none, or one expired at the store's now). The row then carries a fresh token
        (I9) expiring at the store's now + lease, and the handle's `prefetched_ledger()` is the record as it
        stands after the delivery (fields with the new one, full history with its event); `satisfied` is
        judged as a claim judges it. Otherwise the claim is None and the call is exactly `signal` (same
        outcome, same writes, nothing written when refused, pollers woken when delivered).

        For a process that runs the execution itself at once: a claiming delivery wakes no poller, here or
        elsewhere, since nobody else may claim the row while the lease holds; once it lapses with no
        renewal the row is ready like any claim that died mid-flight (I8)."""

    @abc.abstractmethod
    async def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> CancelOutcome:
        """Put a cancel request on the row, with a CancelRequested event (reason, actor).

        Accepted the first time, AlreadyRequested after, AlreadyTerminal(status) on an ended execution (the
        flag is not set), AlreadyTerminal(Cancelled()) for a missing one. A request on a Stopped execution
        lifts the stop (back to Running, or to Compensating(cause) when it stopped inside an unwind) so a
        worker claims it and runs the undos."""

    @abc.abstractmethod
    async def get_execution(self, execution_id: str) -> ExecutionState | None:
        """The row, or None."""

    @abc.abstractmethod
    async def list_executions(
        self,
        flow_id: str | None,
        filter: ExecutionFilter.Any | None = None,
        limit: int | None = None,
        offset: int = 0,
        id_prefix: str | None = None,
    ) -> ExecutionPage:
        """Filter (by workflow when `flow_id` is given, by the arm, by id prefix) BEFORE paging; newest
        created first; `limit` None or negative means all; `total` counts all matches."""

    @abc.abstractmethod
    async def get_field(self, execution_id: str, name: str, tag: str | None = None) -> FieldData | None:
        """The field, or None when missing or when `tag` is given and differs from the stored tag."""

    @abc.abstractmethod
    async def get_all_fields(self, execution_id: str) -> Mapping[str, FieldData]:
        """Every field of the execution (empty for an unknown one)."""

    @abc.abstractmethod
    async def get_history(self, execution_id: str, limit: int | None = None, offset: int = 0) -> HistoryPage:
        """Events in append order (I7), each with its `seq`. `limit` None or negative means all (has_more
        False); `has_more` is "events remain after this page". Unknown execution: empty, has_more False."""

    @abc.abstractmethod
    async def put_workflow(self, info: WorkflowInfo) -> None:
        """Upsert the workflow's metadata (the latest version answers `get_workflow(id)`); every version
        stays readable by its hash. Wakes blocked pollers, whose served set may have grown."""

    @abc.abstractmethod
    async def get_workflow(self, workflow_id: str, hash: str | None = None) -> WorkflowInfo | None:
        """The latest registered version, or the version with that hash."""

    @abc.abstractmethod
    async def list_workflows(self) -> Sequence[WorkflowInfo]:
        """The latest version of every workflow, by id."""

    @abc.abstractmethod
    async def list_workflow_versions(self, workflow_id: str) -> Sequence[WorkflowInfo]:
        """Every registered version of a workflow, oldest first."""

    # ---- operator writes (Flowdeck). Each refuses a live claim, answers instead of raising.

    @abc.abstractmethod
    async def resume(self, execution_id: str, hash: str, event: Event) -> OperatorOutcome:
        """Re-pin the execution to `hash` and make it claimable again.

        Applies to a Stopped execution (its status goes back to Running, or to Compensating(cause) when it
        stopped inside an unwind) or to a non-terminal one no worker holds (a parked one). Appends `event`
        (Resumed, naming from and to hashes and the actor). CLAIM_HELD under a live claim;
        ALREADY_TERMINAL once ended; NOT_FOUND when missing."""

    @abc.abstractmethod
    async def answer(
        self, execution_id: str, path: str, value: FieldData | None, event: Event
    ) -> OperatorOutcome:
        """Record, for a Stopped execution, what the node at `path` did: the field (when a value is
        given) and a valueless progress mark, with the event (Answered), in one transition; the wait row at
        `path` is retired. Write-once: ALREADY_RECORDED if the path already carries a field or a mark.
        NOT_STOPPED unless Stopped; ALREADY_TERMINAL; NOT_FOUND."""

    @abc.abstractmethod
    async def end(self, execution_id: str, status: Failed, event: Event) -> OperatorOutcome:
        """End a non-terminal execution as `status` with no unwind (a person put the world right): writes
        the status and event, retires every wait row. CLAIM_HELD under a live claim; ALREADY_TERMINAL;
        NOT_FOUND."""

    # ---- what an operations console reads (Flowdeck): the store's clock, the event feed, executor
    # heartbeats, and the counts its pages show. Value types in store/feed.py, heartbeats.py, counts.py.

    @abc.abstractmethod
    def now(self) -> datetime:
        """The store's clock: the now its writes stamp and its claim expiries are compared with."""

    @abc.abstractmethod
    async def events_after(
        self,
        after: int,
        *,
        gaps: Collection[int] = (),
        execution_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = feed.BATCH,
    ) -> Sequence[feed.FeedEvent]:
        """Every event whose id is above `after` or in `gaps` (ids a reader skipped that may still
        commit), of one execution when `execution_id` is given (else of one workflow when `workflow_id`
        is), by id, at most `limit`. Ids grow in append order across the whole store; on one execution
        they follow its seq."""

    @abc.abstractmethod
    async def latest_event_id(self) -> int:
        """The newest event's id, 0 for none: a reader starting now asks for the events after it."""

    @abc.abstractmethod
    async def wait_for_change(self, timeout: timedelta) -> None:
        """Return once a write that could make a row ready lands (the writes that wake `claim_ready`: a
        start, a signal, a cancel, a registration; from another process too where the backend hears of
        them), or after `timeout` of monotonic time, whichever is first. A reader of `events_after` waits
        here between reads; other events arrive at its next read."""

    @abc.abstractmethod
    async def record_heartbeat(self, beat: heartbeats.Heartbeat) -> None:
        """Upsert `beat.executor_id`'s heartbeat, stamped `updated` with the store's now; `started` is
        kept from the executor's first heartbeat (its given value, or the store's now then)."""

    @abc.abstractmethod
    async def list_heartbeats(self, fresh_within: timedelta) -> Sequence[heartbeats.RecordedHeartbeat]:
        """The heartbeats updated within `fresh_within` of the store's now (inclusive), by executor id."""

    @abc.abstractmethod
    async def count_by_status(self, workflow_id: str | None = None) -> Sequence[counts.StatusCount]:
        """Executions per workflow and status word (of one workflow when given), by workflow then status;
        only the pairs with executions."""

    @abc.abstractmethod
    async def count_by_version(self, workflow_id: str) -> Sequence[counts.VersionCount]:
        """Every version of `workflow_id` that is registered or named by an execution, by hash: when it
        was first registered and its unended and total executions."""

    @abc.abstractmethod
    async def failure_kinds(self) -> Sequence[str]:
        """The failure kinds of the Failed executions (every workflow), each once, sorted."""

    @abc.abstractmethod
    async def claims_by_executor(self) -> Sequence[counts.ExecutorClaims]:
        """The live claims (expiring after the store's now), per executor id, by executor then execution."""

    @abc.abstractmethod
    async def recent_claimers(self, within: timedelta, scan: int = 5000) -> Sequence[counts.RecentClaimer]:
        """The executors named by the ExecutionClaimed events stamped within `within` of the store's now
        (the newest `scan` of them at most), latest claim first, with how many of those events each has."""
