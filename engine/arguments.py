"""The checks on one DSL call's arguments: node names, knobs, bodies, declared types and call sites.

Each refuses a bad argument at the call that passed it, naming the call (`what`); checks that need the
whole flow wait for registration (engine/schema.py).
"""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from flowdeck.engine import rate_limits, values
from flowdeck.engine.errors import FlowAtomicRefused, FlowInvalidPriority, FlowInvalidRunAfter
from flowdeck.engine.nodes import Body, Knobs
from flowdeck.engine.schedule import Schedule
from flowdeck.store import claim_order

__all__ = [
    "body",
    "call_site",
    "declared",
    "declared_return",
    "display_site",
    "knobs",
    "node_name",
    "recordable",
]

_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_KNOB_NAMES = ("description", "tags", "timeout", "retry", "retry_on", "at_most_once", "atomic", "rate_limit")


def call_site() -> str:
    """The "file:line" of the first frame outside engine/: where the user declared the node."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_ENGINE_DIR):
        frame = frame.f_back
    if frame is None:
        return ""
    return display_site(frame.f_code.co_filename, frame.f_lineno)


def display_site(filename: str, line: int) -> str:
    """ "file:line", the file relative to the working directory when it lies beneath it."""
    try:
        relative = os.path.relpath(filename)
        if not relative.startswith(".."):
            filename = relative
    except ValueError:  # another drive on Windows
        pass
    return f"{filename}:{line}"


def node_name(name: Any, what: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{what}: a node name must be a str, got {name!r}")
    if not name:
        raise ValueError(f"{what}: a node name must not be empty")
    return name


def tags(tags: Any, what: str) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise TypeError(f"{what}: tags must be a list or tuple of str, got {tags!r}")
    tags = tuple(tags)
    if not all(isinstance(t, str) for t in tags):
        raise TypeError(f"{what}: tags must be str, got {tags!r}")
    return tags


def timeout(timeout: Any, what: str) -> timedelta | None:
    if timeout is None:
        return None
    if not isinstance(timeout, timedelta):
        raise TypeError(f"{what}: timeout must be a datetime.timedelta, got {timeout!r}")
    if timeout <= timedelta(0):
        raise ValueError(f"{what}: timeout must be positive, got {timeout}")
    return timeout


def priority(value: Any) -> int:
    """A start's or a workflow's priority (`store.claim_order`): an int (not a bool) within its bounds."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FlowInvalidPriority(value)
    if not claim_order.LOWEST <= value <= claim_order.HIGHEST:
        raise FlowInvalidPriority(value)
    return value


def run_after(value: Any) -> datetime:
    """A start's `run_after`: a timezone-aware datetime (a naive one has no instant to wait for)."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise FlowInvalidRunAfter(value)
    return value


def retry(retry: Any, what: str) -> Schedule | None:
    if retry is not None and not isinstance(retry, Schedule):
        raise TypeError(f"{what}: retry must be a Schedule (Schedule.fixed(...), ...), got {retry!r}")
    return retry


def body(fn: Any, what: str, role: str = "body") -> Body:
    if not callable(fn):
        raise TypeError(f"{what}: the {role} must be a function, got {fn!r}")
    return Body.of(fn)


def optional_body(fn: Any, what: str, role: str) -> Body | None:
    return None if fn is None else body(fn, what, role)


def knobs(what: str, knobs: dict[str, Any], *, atomic_body: Body | None = None) -> Knobs:
    """The knobs of a node; `atomic_body` is the body of a node that may be atomic (a step, an output)."""
    unknown = sorted(set(knobs) - set(_KNOB_NAMES))
    if unknown:
        raise TypeError(
            f"{what}: unexpected keyword argument(s) {', '.join(unknown)} (knobs: {', '.join(_KNOB_NAMES)})"
        )
    description = knobs.get("description", "")
    if not isinstance(description, str):
        raise TypeError(f"{what}: description must be a str, got {description!r}")
    retry_on = knobs.get("retry_on", ())
    if isinstance(retry_on, type):
        retry_on = (retry_on,)
    retry_on = tuple(retry_on)
    if not all(isinstance(e, type) and issubclass(e, BaseException) for e in retry_on):
        raise TypeError(f"{what}: retry_on must be exception classes, got {retry_on!r}")
    return Knobs(
        description=description,
        tags=tags(knobs.get("tags", ()), what),
        timeout=timeout(knobs.get("timeout"), what),
        retry=retry(knobs.get("retry"), what),
        retry_on=retry_on,
        at_most_once=bool(knobs.get("at_most_once", False)),
        atomic=_atomic(what, knobs, atomic_body),
        rate_limit=rate_limits.use_of(knobs.get("rate_limit"), what),
    )


def _atomic(what: str, knobs: dict[str, Any], body: Body | None) -> bool:
    """`atomic=True` where its one transaction can hold: a sync body (it runs on the thread whose database
    connection the transaction is), no timeout (a thread cannot be interrupted inside a transaction), and
    not at-most-once (an atomic node leaves nothing behind when interrupted, so a re-run is safe)."""
    atomic = knobs.get("atomic", False)
    if not isinstance(atomic, bool):
        raise TypeError(f"{what}: atomic must be a bool, got {atomic!r}")
    if not atomic:
        return False
    if body is None:
        raise FlowAtomicRefused(what, "is for .step(...) and .output(...) only")
    if body.is_async:
        raise FlowAtomicRefused(
            what, "needs a sync body: it runs on the thread whose database connection holds the transaction"
        )
    if knobs.get("timeout") is not None:
        raise FlowAtomicRefused(what, "takes no timeout: a thread cannot be interrupted inside a transaction")
    if knobs.get("at_most_once"):
        raise FlowAtomicRefused(what, "needs no at_most_once=True: an interrupted atomic body left nothing")
    return True


def declared_return(fn: Callable[..., Any]) -> Any:
    """A body's return annotation, which counts as its declared type when `type=` is not given.

    None when there is no annotation or it cannot be resolved (a forward reference to a name that does not
    exist yet is not a reason to refuse the flow).
    """
    target = fn if isinstance(fn, types.FunctionType | types.MethodType) else getattr(fn, "__call__", None)  # noqa: B004
    if target is None:
        return None
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        return None
    return hints.get("return")


def declared(type_: Any, fn: Callable[..., Any] | None, what: str) -> Any:
    """The node's declared type: `type=` if given (refused at the call if pydantic cannot validate it),
    else the body's return annotation if pydantic can validate that, else None (undeclared)."""
    if type_ is not None:
        return recordable(type_, what)
    annotation = declared_return(fn) if fn is not None else None
    if annotation is None:
        return None
    try:
        values.adapter(annotation)
    except Exception:  # an annotation is a hint, not a promise; the value will be checked when recorded
        return None
    return annotation


def recordable(type_: Any, what: str) -> Any:
    if type_ is None:
        return None
    try:
        values.adapter(type_)
    except Exception as error:
        raise TypeError(
            f"{what}: values of type {type_!r} cannot be recorded ({type(error).__name__}: "
            f"{str(error).splitlines()[0]}); use a pydantic model or another pydantic-validatable type"
        ) from error
    return type_
