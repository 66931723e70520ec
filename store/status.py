"""An execution's status and the cause of an unwind, with the one JSON shape of each.

Every backend and the wire use these codecs. `terminal` says whether a status never reverts (I5):
Completed, Failed and Cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias


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
    unwind (F0002), so that a resume continues the unwind. `answered` says a person answered the node it
    stopped at (`FlowStore.answer`): it waits only for a resume now.
    """

    code: str
    node: str = ""
    reason: str = ""
    detail: str = ""
    cause: Cause | None = None
    answered: bool = False
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
        case Stopped(code, node, reason, detail, cause, answered):
            shape = {
                "type": "stopped",
                "code": code,
                "node": node,
                "reason": reason,
                "detail": detail,
                "cause": cause_to_json(cause) if cause else None,
            }
            return {**shape, "answered": True} if answered else shape
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
                bool(data.get("answered", False)),
            )
    raise ValueError(f"unknown status type {data['type']!r}")
