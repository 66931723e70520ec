"""The plan's vocabulary: one frozen value per node kind.

A `Flow` (engine/flow.py) is a name, its meta and a tuple of these nodes, built by the DSL; the interpreter
walks them, the schema module hashes them, the diagram renderers draw them. Nothing here runs anything.

Bodies are stored as given; `Body` records once whether a callable is async (starlette's habit), so the
interpreter never asks again. Every node remembers where it was declared (`location`, "file:line"), which
lint and registration errors name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from flowdeck.engine.schedule import Schedule

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = [
    "NO_STATE",
    "Body",
    "Branch",
    "Dispatch",
    "ForEach",
    "Input",
    "Knobs",
    "Loop",
    "LoopOn",
    "Node",
    "Output",
    "Parallel",
    "RateLimitKnob",
    "RateUse",
    "Sleep",
    "Step",
    "Subflow",
]


class _NoState:
    """Marks a loop declared without initial state (the stateless form)."""

    def __repr__(self) -> str:
        return "NO_STATE"


NO_STATE: Any = _NoState()


@dataclass(frozen=True)
class Body:
    """A user function and how to call it: `is_async` (a coroutine function) and `arity` (positional
    parameters it accepts), both decided once at definition time."""

    fn: Callable[..., Any]
    is_async: bool
    arity: int

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> Body:
        if not callable(fn):
            raise TypeError(f"expected a function, got {fn!r}")
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        try:
            params = inspect.signature(fn).parameters.values()
            positional = [
                p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
            ]
            arity = 99 if any(p.kind == p.VAR_POSITIONAL for p in positional) else len(positional)
        except (TypeError, ValueError):
            arity = 1
        return cls(fn, is_async, arity)


@dataclass(frozen=True)
class RateUse:
    """A node's use of a named rate limit (`engine/rate_limits.py`): its name, and for a per-key limit the
    pure function of `ctx` giving the key (its answer is made a string)."""

    name: str
    key: Body | None = None


RateLimitKnob: TypeAlias = "str | tuple[str, Callable[..., Any]] | None"
"""What a node's `rate_limit=` takes: a declared limit's name, or (name, key_of_ctx) for a per-key one."""


@dataclass(frozen=True)
class Knobs:
    """Per-node settings for nodes that run a body.

    `timeout` bounds ONE attempt; `retry` re-asks accidents (a timeout, FlowRetry, an exception listed in
    `retry_on`); `at_most_once` marks a side effect with no idempotency on the other side: found started but
    unfinished after a crash, the node is not re-run and the execution stops (F0004). `atomic` (a sync
    `.step`/`.output` only) runs the body inside the store's transaction that also records its completion,
    the claim fence judged in it: the body's writes to the same database commit if and only if the node
    is recorded (see `spi.Claimed.record_atomically`). `rate_limit`: the named rate limit the body's run
    takes a token of first (`engine/rate_limits.py`).
    """

    description: str = ""
    tags: tuple[str, ...] = ()
    timeout: timedelta | None = None
    retry: Schedule | None = None
    retry_on: tuple[type[BaseException], ...] = ()
    at_most_once: bool = False
    atomic: bool = False
    rate_limit: RateUse | None = None


@dataclass(frozen=True)
class Input:
    """A value handed in from outside; the execution waits here until it is signalled (or seeded at start).

    `on_cancel(ctx, reason)`, when given, makes a cancellation that arrives while waiting here become this
    node's value instead of an unwind.
    """

    name: str
    type: Any
    description: str = ""
    tags: tuple[str, ...] = ()
    on_cancel: Body | None = None
    location: str = ""


@dataclass(frozen=True)
class Output:
    """A computed value, recorded under `name` and readable as `ctx.<name>` downstream."""

    name: str
    body: Body
    type: Any = None
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class Step:
    """A side effect with no value worth keeping; recorded as a completion mark."""

    name: str
    body: Body
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class Sleep:
    """A durable wait: the store owns the deadline, a replay keeps it."""

    name: str
    duration: timedelta
    description: str = ""
    tags: tuple[str, ...] = ()
    on_cancel: Body | None = None
    location: str = ""


@dataclass(frozen=True)
class Branch:
    """One arm of a dispatch: `condition(ctx)` (None for the default arm) and the arm's body."""

    name: str
    condition: Body | None
    body: Body
    location: str = ""


@dataclass(frozen=True)
class Dispatch:
    """The first arm whose condition holds runs; the choice is recorded at `name#chosen` before it runs,
    the value at `name`. `default` is None only while the DSL is still building (unclosed)."""

    name: str
    type: Any
    branches: tuple[Branch, ...]
    default: Branch | None
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class Loop:
    """Repeats `body` until it answers `Loop.done(v)`; iterations are not recorded, the final value is.

    Stateless: `body(ctx)`. Stateful (`initial` given): `body(state, ctx)` answering `Loop.again(state)`.
    """

    name: str
    body: Body
    initial: Any = NO_STATE
    type: Any = None
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class LoopOn:
    """A loop with a durable `schedule` between iterations; every iteration is checkpointed at `name#i`
    (its state) and its wait at `name##i`."""

    name: str
    schedule: Schedule
    body: Body
    initial: Any = NO_STATE
    type: Any = None
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class ForEach:
    """Fans out over `items(ctx)`; item i is recorded at `name~i`, the count at `name~count`, the list of
    results (collection order) at `name`. `body(item)` or `body(item, ctx)`; `compensate(item, value)` per
    item. `concurrency` None means unbounded."""

    name: str
    items: Body
    body: Body
    type: Any = None
    concurrency: int | None = None
    compensate: Body | None = None
    knobs: Knobs = field(default_factory=Knobs)
    location: str = ""


@dataclass(frozen=True)
class Subflow:
    """Embeds `child`; `mapper(ctx)` gives the child's inputs as a dict, recorded at `name~<input>` on
    entry; the child's nodes are keyed under `name~`; its record is readable as `ctx.<name>`."""

    name: str
    child: Flow
    mapper: Body
    location: str = ""


@dataclass(frozen=True)
class Parallel:
    """`zip` / `gather` (every branch must finish, records merge) or `race` (first value wins, the branches
    share their result name)."""

    kind: str  # "zip", "gather" or "race"
    branches: tuple[Flow, ...]
    location: str = ""

    @property
    def name(self) -> str:
        return self.kind


Node: TypeAlias = Input | Output | Step | Sleep | Dispatch | Loop | LoopOn | ForEach | Subflow | Parallel
