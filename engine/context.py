"""The `ctx` a body receives: earlier nodes' values by attribute, plus the attempt's identity and undo notes.

A body reads `ctx.order`, `ctx.total`, `ctx.payment.charge_id` (values after their round trip through the
serializer), `ctx.key` (execution id + durable path: the same on every retry and every replay, so a remote
side can deduplicate on it), `ctx.execution_id`, `ctx.attempt` (0 on the first try, n after n retries) and
`ctx.undo(handler, arg)`, which notes a compensation kept with the step's result in the same write.

While a body runs, `current_step()` answers its call (`StepCall`: the ctx and a count of the effects the
call has started), so code the body calls without being handed the ctx (a `django.tasks` enqueue) can
derive ids that are the same on every replay of the step: `effect_key()` numbers the call's effects from 1
on each attempt, so the n-th effect of a retry or a replay gets the key the n-th effect of the first try had.
"""

from __future__ import annotations

import contextvars
import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowdeck.engine.values import Record

__all__ = [
    "Context",
    "StepCall",
    "UndoNote",
    "current_step",
    "handler_path",
    "resolve_handler",
    "stepped",
    "stepping",
]


@dataclass(frozen=True)
class UndoNote:
    """A compensation noted inside a body: a module-level function (by import path) and its argument."""

    handler: str
    arg: Any

    def to_json(self) -> dict[str, Any]:
        return {"handler": self.handler, "arg": self.arg}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UndoNote:
        return cls(data["handler"], data.get("arg"))


def handler_path(handler: Callable[..., Any]) -> str:
    """ "module:qualname" of a module-level function, refusing what a later process could not import."""
    module = getattr(handler, "__module__", None)
    qualname = getattr(handler, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise TypeError(
            f"ctx.undo needs a module-level function (it is stored by import path and run by a later "
            f"process), got {handler!r}; lambdas and nested functions cannot be found again"
        )
    path = f"{module}:{qualname}"
    try:
        found = resolve_handler(path)
    except (ImportError, AttributeError):
        found = None
    if found is not handler:
        raise TypeError(f"ctx.undo: {path} does not name {handler!r} at module level; define it there")
    return path


def resolve_handler(path: str) -> Callable[..., Any]:
    """The function an undo note names."""
    module, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


class Context(Record):
    """A record of earlier values with the attempt's identity; the identity names are not fields."""

    __slots__ = ("_attempt", "_execution_id", "_path", "_undos")

    def __init__(
        self,
        values: Mapping[str, Any],
        *,
        execution_id: str,
        path: str,
        attempt: int = 0,
        undos: list[UndoNote] | None = None,
    ) -> None:
        super().__init__(values)
        object.__setattr__(self, "_execution_id", execution_id)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_attempt", attempt)
        # a loop shares one list across its iterations, so every note of the node is kept together
        object.__setattr__(self, "_undos", [] if undos is None else undos)

    @property
    def execution_id(self) -> str:
        return self._execution_id

    @property
    def key(self) -> str:
        """A stable idempotency key for this node's side effect: "<execution id>/<durable path>"."""
        return f"{self._execution_id}/{self._path}"

    @property
    def attempt(self) -> int:
        return self._attempt

    def undo(self, handler: Callable[..., Any], arg: Any = None) -> None:
        """Note `handler(arg)` as this step's undo; it is recorded with the step's result, in the same write,
        and runs (last noted first, with the `compensate=` handlers) if the execution unwinds."""
        path = handler_path(handler)
        try:
            json.dumps(arg)
        except (TypeError, ValueError) as error:
            raise TypeError(f"ctx.undo: the argument must be JSON-serializable ({error})") from None
        self._undos.append(UndoNote(path, arg))

    def __repr__(self) -> str:
        return f"Context({self._path!r}, " + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


@dataclass
class StepCall:
    """One call of a body (one attempt): its ctx and how many effects it has keyed so far."""

    context: Context
    effects: int = field(default=0)

    def effect_key(self) -> str:
        """The next effect's key, "<ctx.key>#<n>": the n-th effect of every attempt and replay of this node
        gets the same key, as long as the body starts its effects in the same order (one at a time)."""
        self.effects += 1
        return f"{self.context.key}#{self.effects}"


_step: contextvars.ContextVar[StepCall | None] = contextvars.ContextVar("flowdeck_step", default=None)


def current_step() -> StepCall | None:
    """The body call running in this context (a sync body's thread inherits it), None outside one."""
    return _step.get()


def stepping(ctx: Context | None) -> contextvars.Token[StepCall | None]:
    """Mark a body's call with `ctx` (None: a call with no ctx, such as an undo handler, is no step)."""
    return _step.set(None if ctx is None else StepCall(ctx))


def stepped(token: contextvars.Token[StepCall | None]) -> None:
    """The call is over: the context is back to what it was before `stepping`."""
    _step.reset(token)
