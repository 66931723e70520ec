"""What the store's verbs answer instead of raising, and how a claimed attempt ends (`ClaimOutcome`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from flowdeck.store.events import Event
from flowdeck.store.fields import FieldData
from flowdeck.store.status import Status, Stopped


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


@dataclass(frozen=True)
class Completion:
    """A node's record as `Claimed.record_atomically` writes it once its body returned: the value (None:
    a valueless mark), the events (its StepCompleted last) and the extra fields (its undo notes)."""

    value: FieldData | None
    events: Sequence[Event]
    extra_fields: Mapping[str, FieldData] | None = None


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
