"""The flow DSL: a `Flow` is a name, its meta and a tuple of nodes; every builder call returns a new Flow.

A flow is a plan, not an execution. Building one runs nothing and writes nothing; checks that need the
whole definition (reserved characters, duplicate durable names, F0006) wait for registration or `lint`
(engine/schema.py, engine/lint.py). Checks that only need one call's arguments (a name that is not a
string, a negative concurrency, a timeout that is not a timedelta) fail at that call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from flowdeck.engine import arguments, errors, nodes
from flowdeck.engine.concurrency import Concurrency
from flowdeck.engine.nodes import NO_STATE, Knobs, Node, RateLimitKnob
from flowdeck.engine.schedule import Schedule
from flowdeck.store import claim_order

__all__ = ["DispatchBuilder", "Flow", "Loop", "LoopAgain", "LoopDone", "Meta"]


# ------------------------------------------------------------------------------------------ meta


@dataclass(frozen=True)
class Meta:
    """A flow's own knobs, as metadata: they do not change its structural hash."""

    description: str = ""
    tags: tuple[str, ...] = ()
    timeout: timedelta | None = None
    retry: Schedule | None = None
    version: str = ""
    priority: int = claim_order.DEFAULT  # a start's priority when it gives none (store.claim_order)
    concurrency: Concurrency | None = None  # how many may run at once (engine/concurrency.py)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", arguments.tags(self.tags, "Meta"))
        arguments.timeout(self.timeout, "Meta")
        arguments.retry(self.retry, "Meta")
        arguments.priority(self.priority)
        if self.concurrency is not None and not isinstance(self.concurrency, Concurrency):
            raise TypeError(f"Meta: concurrency must be a Concurrency(...), got {self.concurrency!r}")


# ------------------------------------------------------------------------------------------ loops


@dataclass(frozen=True)
class LoopDone:
    """A loop body's answer: stop, and record `value` under the loop's name."""

    value: Any = None


@dataclass(frozen=True)
class LoopAgain:
    """A loop body's answer: go round again (a stateful loop carries `state` into the next iteration)."""

    state: Any = None


class Loop:
    """What a loop body answers: `Loop.done(value)` or `Loop.again(state)`."""

    @staticmethod
    def done(value: Any = None) -> LoopDone:
        return LoopDone(value)

    @staticmethod
    def again(state: Any = None) -> LoopAgain:
        return LoopAgain(state)


# ------------------------------------------------------------------------------ call-site checks


def _flow(value: Any, what: str) -> Flow:
    if isinstance(value, DispatchBuilder):
        raise errors.FlowUnclosedDispatch(value.name, what)
    if not isinstance(value, Flow):
        raise TypeError(f"{what}: expected a Flow, got {value!r}")
    return value


# ------------------------------------------------------------------------------------------ flows


class _InputMethod:
    """`Flow.input(name, type)` on the class is the shorthand `Flow.init(name).input(name, type)`;
    on a flow it appends an input node."""

    def __get__(self, obj: Flow | None, owner: type[Flow]) -> Callable[..., Flow]:
        if obj is None:

            def shorthand(name: str, type: Any, **kwargs: Any) -> Flow:
                return owner.init(name)._input(name, type, **kwargs)

            shorthand.__doc__ = "A workflow named after its first input: Flow.init(name).input(name, type)."
            return shorthand
        return obj._input


@dataclass(frozen=True)
class Flow:
    """A plan: a named chain of nodes. Every builder method returns a new Flow; the original is unchanged."""

    name: str
    nodes: tuple[Node, ...] = ()
    meta: Meta = field(default_factory=Meta)

    # ------------------------------------------------------------------------------ construction

    @classmethod
    def init(cls, name: str, *, meta: Meta | None = None) -> Flow:
        """An empty flow. An empty name is allowed here and refused at registration (FlowUnnamed)."""
        if not isinstance(name, str):
            raise TypeError(f"Flow.init: the flow name must be a str, got {name!r}")
        if meta is not None and not isinstance(meta, Meta):
            raise TypeError(f"Flow.init: meta must be a Meta, got {meta!r}")
        return cls(name, (), meta or Meta())

    def _add(self, node: Node) -> Flow:
        return replace(self, nodes=(*self.nodes, node))

    def with_meta(self, meta: Meta) -> Flow:
        """The same flow with other meta (which does not change its structural hash)."""
        return replace(self, meta=meta)

    input = _InputMethod()

    def _input(
        self,
        name: str,
        type: Any,
        *,
        description: str = "",
        tags: Iterable[str] = (),
        on_cancel: Callable[..., Any] | None = None,
    ) -> Flow:
        """Wait here for a value handed in from outside (a signal, or seeded at start).

        `on_cancel(ctx, reason)` makes a cancellation arriving while waiting here become this node's value.
        """
        what = "input"
        if type is None:
            raise TypeError(
                f"input {name!r}: an input needs a type (a pydantic-validatable type such as Order)"
            )
        return self._add(
            nodes.Input(
                name=arguments.node_name(name, what),
                type=arguments.recordable(type, f"input {name!r}"),
                description=_description(description, what),
                tags=arguments.tags(tags, what),
                on_cancel=arguments.optional_body(on_cancel, what, "on_cancel handler"),
                location=arguments.call_site(),
            )
        )

    def output(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        type: Any = None,
        compensate: Callable[..., Any] | None = None,
        description: str = "",
        tags: Iterable[str] = (),
        timeout: timedelta | None = None,
        retry: Schedule | None = None,
        retry_on: Iterable[type[BaseException]] = (),
        at_most_once: bool = False,
        atomic: bool = False,
        rate_limit: RateLimitKnob = None,
    ) -> Flow:
        """Compute `fn(ctx)` and record it under `name`; later nodes read it as `ctx.<name>`.

        `compensate(ctx)` undoes it if a later node fails (ctx then holds this node's value too).
        `rate_limit`: a declared rate limit's name, or `(name, key_of_ctx)` for a per-key one; the body runs
        once it holds a token (engine/rate_limits.py).
        """
        what = f"output {name!r}"
        body = arguments.body(fn, what)
        given = _given(description, tags, timeout, retry, retry_on, at_most_once)
        return self._add(
            nodes.Output(
                name=arguments.node_name(name, "output"),
                body=body,
                type=arguments.declared(type, fn, what),
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=arguments.knobs(
                    what, {**given, "atomic": atomic, "rate_limit": rate_limit}, atomic_body=body
                ),
                location=arguments.call_site(),
            )
        )

    def step(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        compensate: Callable[..., Any] | None = None,
        description: str = "",
        tags: Iterable[str] = (),
        timeout: timedelta | None = None,
        retry: Schedule | None = None,
        retry_on: Iterable[type[BaseException]] = (),
        at_most_once: bool = False,
        atomic: bool = False,
        rate_limit: RateLimitKnob = None,
    ) -> Flow:
        """Run `fn(ctx)` for its effect; only its completion is recorded (its return value is dropped).
        `rate_limit` as for `output`."""
        what = f"step {name!r}"
        body = arguments.body(fn, what)
        given = _given(description, tags, timeout, retry, retry_on, at_most_once)
        return self._add(
            nodes.Step(
                name=arguments.node_name(name, "step"),
                body=body,
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=arguments.knobs(
                    what, {**given, "atomic": atomic, "rate_limit": rate_limit}, atomic_body=body
                ),
                location=arguments.call_site(),
            )
        )

    def sleep(
        self,
        name: str,
        duration: timedelta,
        *,
        description: str = "",
        tags: Iterable[str] = (),
        on_cancel: Callable[..., Any] | None = None,
    ) -> Flow:
        """A durable wait: the store keeps the deadline, so a restart resumes at the original one."""
        what = f"sleep {name!r}"
        if not isinstance(duration, timedelta):
            raise TypeError(f"{what}: the duration must be a datetime.timedelta, got {duration!r}")
        return self._add(
            nodes.Sleep(
                name=arguments.node_name(name, "sleep"),
                duration=duration,
                description=_description(description, what),
                tags=arguments.tags(tags, what),
                on_cancel=arguments.optional_body(on_cancel, what, "on_cancel handler"),
                location=arguments.call_site(),
            )
        )

    def dispatch(self, name: str, type: Any = None, **knobs: Any) -> DispatchBuilder:
        """Start a branch: chain `.when(cond, fn, name=...)` and close with `.otherwise(fn)`."""
        what = f"dispatch {name!r}"
        return DispatchBuilder(
            flow=self,
            name=arguments.node_name(name, "dispatch"),
            type=arguments.recordable(type, what),
            knobs=arguments.knobs(what, knobs),
            branches=(),
            location=arguments.call_site(),
        )

    def loop(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        initial: Any = NO_STATE,
        type: Any = None,
        compensate: Callable[..., Any] | None = None,
        **knobs: Any,
    ) -> Flow:
        """Repeat `fn(ctx)` (or `fn(state, ctx)` with `initial`) until it answers `Loop.done(v)`.

        Iterations are not recorded; a crash restarts the loop. The final value is recorded under `name`.
        """
        what = f"loop {name!r}"
        return self._add(
            nodes.Loop(
                name=arguments.node_name(name, "loop"),
                body=arguments.body(fn, what),
                initial=initial,
                type=arguments.recordable(type, what),
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=arguments.knobs(what, knobs),
                location=arguments.call_site(),
            )
        )

    def loop_on(
        self,
        name: str,
        schedule: Schedule,
        fn: Callable[..., Any],
        *,
        initial: Any = NO_STATE,
        type: Any = None,
        compensate: Callable[..., Any] | None = None,
        **knobs: Any,
    ) -> Flow:
        """A loop with a durable `schedule` between iterations; every iteration is checkpointed."""
        what = f"loop_on {name!r}"
        if not isinstance(schedule, Schedule):
            raise TypeError(
                f"{what}: schedule must be a Schedule (Schedule.fixed(...), ...), got {schedule!r}"
            )
        return self._add(
            nodes.LoopOn(
                name=arguments.node_name(name, "loop_on"),
                schedule=schedule,
                body=arguments.body(fn, what),
                initial=initial,
                type=arguments.recordable(type, what),
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=arguments.knobs(what, knobs),
                location=arguments.call_site(),
            )
        )

    def foreach(
        self,
        name: str,
        items: Callable[..., Any],
        fn: Callable[..., Any],
        *,
        type: Any = None,
        concurrency: int | None = None,
        compensate: Callable[..., Any] | None = None,
        **knobs: Any,
    ) -> Flow:
        """Run `fn(item)` (or `fn(item, ctx)`) for each of `items(ctx)`; each item is recorded as it lands.

        `type` is the per-item value type; the node's value is the list of results in collection order.
        `concurrency` bounds the items in flight (None: unbounded). `compensate(item, value)` is per item.
        """
        what = f"foreach {name!r}"
        if concurrency is not None:
            if isinstance(concurrency, bool) or not isinstance(concurrency, int):
                raise TypeError(f"{what}: concurrency must be an int or None, got {concurrency!r}")
            if concurrency < 1:
                raise ValueError(f"{what}: concurrency must be at least 1, got {concurrency}")
        return self._add(
            nodes.ForEach(
                name=arguments.node_name(name, "foreach"),
                items=arguments.body(items, what, "items function"),
                body=arguments.body(fn, what),
                type=arguments.declared(type, fn, what),
                concurrency=concurrency,
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=arguments.knobs(what, knobs),
                location=arguments.call_site(),
            )
        )

    def subflow(self, name: str, child: Flow, mapper: Callable[..., Any]) -> Flow:
        """Embed `child`: `mapper(ctx)` answers the child's inputs as a dict; the child's nodes are keyed
        under `name~` and its record is readable as `ctx.<name>`."""
        what = f"subflow {name!r}"
        return self._add(
            nodes.Subflow(
                name=arguments.node_name(name, "subflow"),
                child=_flow(child, "subflow"),
                mapper=arguments.body(mapper, what, "input mapper"),
                location=arguments.call_site(),
            )
        )

    # ------------------------------------------------------------------------------- composition

    def and_then(self, other: Flow) -> Flow:
        """This flow, then `other`, which sees everything this one produced. Keeps this flow's name/meta."""
        other = _flow(other, "and_then")
        return replace(self, nodes=(*self.nodes, *other.nodes))

    def zip(self, other: Flow) -> Flow:
        """This flow and `other` at the same time; both must finish, and their records merge."""
        other = _flow(other, "zip")
        return Flow(self.name, (nodes.Parallel("zip", (self, other), arguments.call_site()),), self.meta)

    @classmethod
    def gather(cls, *flows: Flow) -> Flow:
        """Two to five flows at the same time; all must finish. Named after the first."""
        if not 2 <= len(flows) <= 5:
            raise ValueError(f"Flow.gather takes 2 to 5 flows, got {len(flows)}")
        branches = tuple(_flow(f, "gather") for f in flows)
        return cls(
            branches[0].name, (nodes.Parallel("gather", branches, arguments.call_site()),), branches[0].meta
        )

    @classmethod
    def race(cls, a: Flow, b: Flow) -> Flow:
        """Two flows at the same time; the first to produce a value wins. Named after the first."""
        a, b = _flow(a, "race"), _flow(b, "race")
        return cls(a.name, (nodes.Parallel("race", (a, b), arguments.call_site()),), a.meta)


def _description(description: Any, what: str) -> str:
    if not isinstance(description, str):
        raise TypeError(f"{what}: description must be a str, got {description!r}")
    return description


def _given(
    description: str,
    tags: Iterable[str],
    timeout: timedelta | None,
    retry: Schedule | None,
    retry_on: Iterable[type[BaseException]],
    at_most_once: bool,
) -> dict[str, Any]:
    return {
        "description": description,
        "tags": tags,
        "timeout": timeout,
        "retry": retry,
        "retry_on": retry_on,
        "at_most_once": at_most_once,
    }


# ------------------------------------------------------------------------------------- dispatch


@dataclass(frozen=True)
class DispatchBuilder:
    """A dispatch being built. It is not a Flow: close it with `.otherwise(...)` to continue.

    The flow-building methods exist here only to refuse, naming the dispatch and `.otherwise`.
    """

    flow: Flow
    name: str
    type: Any
    knobs: Knobs
    branches: tuple[nodes.Branch, ...]
    location: str

    def when(self, cond: Callable[..., Any], fn: Callable[..., Any], *, name: str) -> DispatchBuilder:
        """An arm: if `cond(ctx)` holds (arms are tried in order), the dispatch's value is `fn(ctx)`."""
        what = f"dispatch {self.name!r}"
        branch = nodes.Branch(
            name=arguments.node_name(name, f"{what} .when"),
            condition=arguments.body(cond, what, "condition"),
            body=arguments.body(fn, what),
            location=arguments.call_site(),
        )
        return replace(self, branches=(*self.branches, branch))

    def otherwise(
        self,
        fn: Callable[..., Any],
        *,
        name: str = "otherwise",
        compensate: Callable[..., Any] | None = None,
    ) -> Flow:
        """The default arm; closes the dispatch and gives the flow back."""
        what = f"dispatch {self.name!r}"
        default = nodes.Branch(
            name=arguments.node_name(name, f"{what} .otherwise"),
            condition=None,
            body=arguments.body(fn, what),
            location=arguments.call_site(),
        )
        type_ = self.type
        if type_ is None:
            # Every arm annotated alike counts as a declaration, as a single body's annotation does.
            annotations = {repr(arguments.declared_return(b.body.fn)) for b in (*self.branches, default)}
            type_ = arguments.declared(None, default.body.fn, what) if len(annotations) == 1 else None
        return self.flow._add(
            nodes.Dispatch(
                name=self.name,
                type=type_,
                branches=self.branches,
                default=default,
                compensate=arguments.optional_body(compensate, what, "compensate handler"),
                knobs=self.knobs,
                location=self.location,
            )
        )

    def _unclosed(self, attempted: str) -> errors.FlowUnclosedDispatch:
        return errors.FlowUnclosedDispatch(self.name, attempted)

    def input(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("input")

    def output(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("output")

    def step(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("step")

    def sleep(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("sleep")

    def dispatch(self, *args: Any, **kwargs: Any) -> DispatchBuilder:
        raise self._unclosed("dispatch")

    def loop(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("loop")

    def loop_on(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("loop_on")

    def foreach(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("foreach")

    def subflow(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("subflow")

    def and_then(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("and_then")

    def zip(self, *args: Any, **kwargs: Any) -> Flow:
        raise self._unclosed("zip")
