"""The engine's exceptions. One root; the docstring is the default message; data rides as attributes.

Stop codes (F0001 …) are not exceptions: they are stable words on a Stopped execution (see `STOP_CODES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from flowdeck.store.spi import FlowStoreError

__all__ = [
    "STOP_CODES",
    "FlowAlreadyAnswered",
    "FlowAlreadyDelivered",
    "FlowAtomicRefused",
    "FlowRateLimitUnknown",
    "FlowCancelled",
    "FlowClaimHeld",
    "FlowConfigError",
    "FlowDefinitionError",
    "FlowDomainError",
    "FlowDuplicateExecution",
    "FlowDuplicateName",
    "FlowError",
    "FlowExecutionNotFound",
    "FlowExecutionTerminal",
    "FlowInputError",
    "FlowInvalidId",
    "FlowInvalidPriority",
    "FlowInvalidRunAfter",
    "FlowListenMismatch",
    "FlowLoopExhausted",
    "FlowNondeterministicCollection",
    "FlowNotRegistered",
    "FlowNotResumable",
    "FlowNotStopped",
    "FlowOperatorError",
    "FlowReservedName",
    "FlowResumeConflict",
    "FlowRetry",
    "FlowRunEnded",
    "FlowScheduleError",
    "FlowScheduleExists",
    "FlowScheduleNotFound",
    "FlowSignalError",
    "FlowStepTimeout",
    "FlowStoreError",
    "FlowUnclosedDispatch",
    "FlowUnknownNode",
    "FlowUnnamed",
    "FlowValueError",
    "FlowWorkflowError",
]


class FlowError(Exception):
    """A Flowdeck error."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or (self.__doc__ or "").strip().splitlines()[0])

    @property
    def kind(self) -> str:
        """The simple class name; it is what `Failed.kind` and `StepFailed.error_kind` record."""
        return type(self).__name__


# --------------------------------------------------------------------------------- business answers


class FlowDomainError(FlowError):
    """The business said no. Subclass it: the class name becomes the failure's kind, the execution unwinds
    its compensations and undos and ends Failed(message, kind). Never retried."""


# ------------------------------------------------------------------------------- the world not answering


class FlowRetry(FlowError):
    """Raised by a body to say the world did not answer: run this attempt again, under the same key.

    `after` overrides the node's schedule for this one retry. When the node's retry budget is spent, the
    execution stops (F0003) for a person.
    """

    def __init__(self, message: str = "", *, after: timedelta | None = None) -> None:
        super().__init__(message or "the step asked to be retried")
        self.after = after


class FlowStepTimeout(FlowError):
    """One attempt of a node ran past its timeout."""

    def __init__(self, node: str, timeout: timedelta) -> None:
        super().__init__(f"node {node!r} timed out after {timeout.total_seconds():g}s")
        self.node = node
        self.timeout = timeout


# ---------------------------------------------------------------------------------------- definitions


class FlowWorkflowError(FlowError):
    """A workflow could not be found or used."""


class FlowNotRegistered(FlowWorkflowError):
    """No workflow is registered under that id."""

    def __init__(self, workflow_id: str, registered: Sequence[str] = ()) -> None:
        names = ", ".join(sorted(registered)) or "none"
        super().__init__(f"workflow {workflow_id!r} is not registered (registered: {names})")
        self.workflow_id = workflow_id
        self.registered = tuple(registered)


class FlowDefinitionError(FlowWorkflowError):
    """A flow definition was refused."""


class FlowUnnamed(FlowDefinitionError):
    """A flow must have a name: use Flow.init("name")."""


class FlowReservedName(FlowDefinitionError):
    """A node name uses a reserved character (`~` or `#`)."""

    def __init__(self, name: str, location: str = "") -> None:
        where = f" (at {location})" if location else ""
        super().__init__(f"node name {name!r} uses a reserved character ('~' or '#'){where}")
        self.name = name
        self.location = location


class FlowDuplicateName(FlowDefinitionError):
    """Two nodes claim one durable name."""

    def __init__(self, name: str, locations: Sequence[str] = ()) -> None:
        where = "; ".join(locations)
        super().__init__(
            f"{len(locations) or 2} nodes claim the durable name {name!r}"
            + (f": {where}" if where else "")
            + "; rename one of them"
        )
        self.name = name
        self.locations = tuple(locations)


class FlowUnclosedDispatch(FlowDefinitionError):
    """A dispatch must be closed with .otherwise(...) before the flow continues."""

    def __init__(self, dispatch: str, attempted: str) -> None:
        super().__init__(
            f"dispatch {dispatch!r} is not closed: call .otherwise(...) on it before .{attempted}(...)"
        )
        self.dispatch = dispatch
        self.attempted = attempted


class FlowListenMismatch(FlowDefinitionError):
    """F0006: a flow that listens for cancellation in one wait must listen in every wait."""

    def __init__(self, listening: Sequence[str], deaf: Sequence[str]) -> None:
        super().__init__(
            "F0006: the flow listens for cancellation (on_cancel=) in "
            + ", ".join(repr(n) for n in listening)
            + " but not in "
            + ", ".join(repr(n) for n in deaf)
            + "; give every input and sleep an on_cancel, or none"
        )
        self.listening = tuple(listening)
        self.deaf = tuple(deaf)


class FlowAtomicRefused(FlowDefinitionError):
    """An `atomic=True` node was declared in a way its one transaction cannot keep."""

    def __init__(self, node: str, reason: str) -> None:
        super().__init__(f"{node}: atomic=True {reason}")
        self.node = node
        self.reason = reason


class FlowRateLimitUnknown(FlowDefinitionError):
    """A node uses a rate limit the engine has no declaration of, or uses it the wrong way (a key for a
    limit that is not per key, or none for one that is)."""

    def __init__(self, node: str, limit: str, reason: str) -> None:
        super().__init__(f"{node}: rate_limit {limit!r} {reason}")
        self.node = node
        self.limit = limit
        self.reason = reason


class FlowConfigError(FlowError):
    """The engine configuration is invalid."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("invalid engine configuration: " + "; ".join(problems))
        self.problems = tuple(problems)


# ----------------------------------------------------------------------------------------- executions


class FlowInvalidId(FlowError):
    """An id broke the id rule (length, control characters, '/', '.' or '..'); nothing was recorded."""

    def __init__(self, what: str, value: object, problem: str) -> None:
        shown = value[:60] + "…" if isinstance(value, str) and len(value) > 60 else value
        super().__init__(f"invalid {what} {shown!r}: {problem}")
        self.what = what
        self.problem = problem


class FlowInvalidPriority(FlowError):
    """A priority is not an integer from -100 (claimed last) to 100 (claimed first); nothing was recorded."""

    def __init__(self, value: object) -> None:
        super().__init__(f"invalid priority {value!r}: an integer from -100 (last) to 100 (first) expected")
        self.value = value


class FlowInvalidRunAfter(FlowError):
    """A start's `run_after` is not a timezone-aware datetime; nothing was recorded."""

    def __init__(self, value: object) -> None:
        super().__init__(f"invalid run_after {value!r}: a timezone-aware datetime expected")
        self.value = value


class FlowExecutionNotFound(FlowError):
    """No execution has that id."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"no execution {execution_id!r}")
        self.execution_id = execution_id


class FlowExecutionTerminal(FlowError):
    """The execution has already ended."""

    def __init__(self, execution_id: str, status: str) -> None:
        super().__init__(f"execution {execution_id!r} has already ended ({status})")
        self.execution_id = execution_id
        self.status = status


class FlowDuplicateExecution(FlowError):
    """An execution with that id already exists."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"an execution with id {execution_id!r} already exists")
        self.execution_id = execution_id


class FlowSignalError(FlowError):
    """A signal could not be delivered."""


class FlowAlreadyDelivered(FlowSignalError):
    """That input was already delivered; the first value stands."""

    def __init__(self, execution_id: str, name: str) -> None:
        super().__init__(f"input {name!r} of execution {execution_id!r} was already delivered")
        self.execution_id = execution_id
        self.name = name


class FlowInputError(FlowSignalError):
    """An input name or value was refused (undeclared name, or a value failing the input's type)."""

    def __init__(self, message: str, *, name: str = "", declared: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.declared = tuple(declared)


class FlowOperatorError(FlowError):
    """An operator verb could not be applied to this execution."""


class FlowNotStopped(FlowOperatorError):
    """The verb needs a Stopped execution and this one is not stopped."""

    def __init__(self, execution_id: str, status: str) -> None:
        super().__init__(
            f"execution {execution_id!r} is not stopped ({status}); only a stopped one takes this verb"
        )
        self.execution_id = execution_id
        self.status = status


class FlowNotResumable(FlowOperatorError):
    """Resume takes a stopped execution, or a parked one (started under a version this engine does not
    serve); this one is neither, so there is nothing to resume."""

    def __init__(self, execution_id: str, status: str) -> None:
        super().__init__(
            f"execution {execution_id!r} is {status}, neither stopped nor parked; "
            "only a stopped or parked execution resumes"
        )
        self.execution_id = execution_id
        self.status = status


class FlowClaimHeld(FlowOperatorError):
    """A worker holds a live claim on the execution; an operator may not change it under that worker."""

    def __init__(self, execution_id: str, executor: str | None = None) -> None:
        who = f" by {executor}" if executor else ""
        super().__init__(f"execution {execution_id!r} is held{who}; try again once the worker lets go")
        self.execution_id = execution_id
        self.executor = executor


class FlowAlreadyAnswered(FlowOperatorError):
    """The node already carries a recorded result, so there is nothing to answer for."""

    def __init__(self, execution_id: str, node: str) -> None:
        super().__init__(f"node {node!r} of execution {execution_id!r} is already recorded")
        self.execution_id = execution_id
        self.node = node


class FlowUnknownNode(FlowOperatorError):
    """No node of the flow has that durable path."""

    def __init__(self, node: str, known: Sequence[str] = ()) -> None:
        names = ", ".join(known) or "none"
        super().__init__(f"the flow has no node {node!r} (nodes: {names})")
        self.node = node
        self.known = tuple(known)


class FlowResumeConflict(FlowOperatorError):
    """The dry run found conflicts (F0101/F0102): resuming on the newest version would not be safe.

    `report` is the dry run's report, conflicts included."""

    def __init__(self, execution_id: str, report: object, conflicts: Sequence[object] = ()) -> None:
        listed = "; ".join(str(c) for c in conflicts)
        super().__init__(
            f"execution {execution_id!r} cannot resume on the newest version: {listed or 'conflicts'}"
        )
        self.execution_id = execution_id
        self.report = report


# ------------------------------------------------------------------------------------ running a flow


class FlowScheduleError(FlowError):
    """A schedule's definition was refused (its name, cron, interval, zone, workflow or inputs); `field`
    names the part."""

    def __init__(self, message: str = "", *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class FlowScheduleExists(FlowError):
    """A schedule with that name exists already."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a schedule named {name!r} exists already")
        self.name = name


class FlowScheduleNotFound(FlowError):
    """No schedule has that name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no schedule named {name!r}")
        self.name = name


class FlowCancelled(FlowError):
    """The execution was asked to cancel."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(f"cancelled: {reason}" if reason else "cancelled")
        self.reason = reason


class FlowValueError(FlowError):
    """A node's value could not be recorded: it is not JSON-native and no type= was declared."""

    def __init__(self, node: str, detail: str) -> None:
        super().__init__(
            f"node {node!r} produced a value that cannot be recorded ({detail}); "
            "declare its type with type=... (a pydantic-validatable type) or return JSON-native data"
        )
        self.node = node


class FlowLoopExhausted(FlowError):
    """A scheduled loop ran out of schedule before its body said done."""


class FlowNondeterministicCollection(FlowError):
    """A foreach's collection changed size between attempts."""

    def __init__(self, node: str, recorded: int, now: int) -> None:
        super().__init__(f"foreach {node!r} recorded {recorded} items but now computes {now}")
        self.node = node


class FlowRunEnded(FlowError):
    """A locally run flow did not complete; `status` is how it ended (Failed, Cancelled or Stopped)."""

    def __init__(self, flow: str, status: object) -> None:
        show = getattr(status, "show", None)
        ended = show() if callable(show) else repr(status)
        super().__init__(f"flow {flow!r} did not complete: {ended}")
        self.flow = flow
        self.status = status


# ---------------------------------------------------------------------------------------- stop codes

STOP_CODES: dict[str, str] = {
    "F0001": "A mistake in the program (an unexpected exception). Fix the code, deploy it, then "
    "`flowdeck resume EID` (dry run) and `flowdeck resume EID --go`.",
    "F0002": "An undo or compensation kept failing during an unwind. Put the world right or fix the "
    "handler, then resume (the unwind continues), or `flowdeck end EID` if a person has undone it by hand.",
    "F0003": "A step asked to be retried more times than its schedule allows (the world did not answer). "
    "Check the remote system, then resume; or answer for the step.",
    "F0004": "An at-most-once step was found started but unfinished after a crash: nobody knows whether it "
    "acted. Find out, then `flowdeck answer EID NODE JSON` and resume (or end or cancel it).",
    "F0101": "On resume: the record holds results that the new version never asks for. Decide by hand: "
    "end, cancel, or deploy a version that keeps those nodes.",
    "F0102": "On resume: a recorded node is now asked a different question (other inputs, another branch, "
    "another collection). Deploy a compatible version, or end or cancel the instance.",
}
