"""The flow DSL: a `Flow` is a name, its meta and a tuple of nodes; every builder call returns a new Flow.

A flow is a plan, not an execution. Building one runs nothing and writes nothing; checks that need the
whole definition (reserved characters, duplicate durable names, F0006) wait for registration or `lint`
(engine/schema.py, engine/lint.py). Checks that only need one call's arguments (a name that is not a
string, a negative concurrency, a timeout that is not a timedelta) fail at that call.
"""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from engine import errors, nodes, values
from engine.nodes import NO_STATE, Body, Knobs, Node
from engine.schedule import Schedule

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", _tags(self.tags, "Meta"))
        _timeout(self.timeout, "Meta")
        _retry(self.retry, "Meta")


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

_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_KNOB_NAMES = ("description", "tags", "timeout", "retry", "retry_on", "at_most_once")


def _call_site() -> str:
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


def _node_name(name: Any, what: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{what}: a node name must be a str, got {name!r}")
    if not name:
        raise ValueError(f"{what}: a node name must not be empty")
    return name


def _tags(tags: Any, what: str) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise TypeError(f"{what}: tags must be a list or tuple of str, got {tags!r}")
    tags = tuple(tags)
    if not all(isinstance(t, str) for t in tags):
        raise TypeError(f"{what}: tags must be str, got {tags!r}")
    return tags


def _timeout(timeout: Any, what: str) -> timedelta | None:
    if timeout is None:
        return None
    if not isinstance(timeout, timedelta):
        raise TypeError(f"{what}: timeout must be a datetime.timedelta, got {timeout!r}")
    if timeout <= timedelta(0):
        raise ValueError(f"{what}: timeout must be positive, got {timeout}")
    return timeout


def _retry(retry: Any, what: str) -> Schedule | None:
    if retry is not None and not isinstance(retry, Schedule):
        raise TypeError(f"{what}: retry must be a Schedule (Schedule.fixed(...), ...), got {retry!r}")
    return retry


def _body(fn: Any, what: str, role: str = "body") -> Body:
    if not callable(fn):
        raise TypeError(f"{what}: the {role} must be a function, got {fn!r}")
    return Body.of(fn)


def _optional_body(fn: Any, what: str, role: str) -> Body | None:
    return None if fn is None else _body(fn, what, role)


def _knobs(what: str, knobs: dict[str, Any]) -> Knobs:
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
        tags=_tags(knobs.get("tags", ()), what),
        timeout=_timeout(knobs.get("timeout"), what),
        retry=_retry(knobs.get("retry"), what),
        retry_on=retry_on,
        at_most_once=bool(knobs.get("at_most_once", False)),
    )


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


def _declared(type_: Any, fn: Callable[..., Any] | None, what: str) -> Any:
    """The node's declared type: `type=` if given (refused at the call if pydantic cannot validate it),
    else the body's return annotation if pydantic can validate that, else None (undeclared)."""
    if type_ is not None:
        return _recordable(type_, what)
    annotation = declared_return(fn) if fn is not None else None
    if annotation is None:
        return None
    try:
        values.adapter(annotation)
    except Exception:  # an annotation is a hint, not a promise; the value will be checked when recorded
        return None
    return annotation


def _recordable(type_: Any, what: str) -> Any:
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
                name=_node_name(name, what),
                type=_recordable(type, f"input {name!r}"),
                description=_description(description, what),
                tags=_tags(tags, what),
                on_cancel=_optional_body(on_cancel, what, "on_cancel handler"),
                location=_call_site(),
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
    ) -> Flow:
        """Compute `fn(ctx)` and record it under `name`; later nodes read it as `ctx.<name>`.

        `compensate(ctx)` undoes it if a later node fails (ctx then holds this node's value too).
        """
        what = f"output {name!r}"
        return self._add(
            nodes.Output(
                name=_node_name(name, "output"),
                body=_body(fn, what),
                type=_declared(type, fn, what),
                compensate=_optional_body(compensate, what, "compensate handler"),
                knobs=_knobs(what, _given(description, tags, timeout, retry, retry_on, at_most_once)),
                location=_call_site(),
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
    ) -> Flow:
        """Run `fn(ctx)` for its effect; only its completion is recorded (its return value is dropped)."""
        what = f"step {name!r}"
        return self._add(
            nodes.Step(
                name=_node_name(name, "step"),
                body=_body(fn, what),
                compensate=_optional_body(compensate, what, "compensate handler"),
                knobs=_knobs(what, _given(description, tags, timeout, retry, retry_on, at_most_once)),
                location=_call_site(),
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
                name=_node_name(name, "sleep"),
                duration=duration,
                description=_description(description, what),
                tags=_tags(tags, what),
                on_cancel=_optional_body(on_cancel, what, "on_cancel handler"),
                location=_call_site(),
            )
        )

    def dispatch(self, name: str, type: Any = None, **knobs: Any) -> DispatchBuilder:
        """Start a branch: chain `.when(cond, fn, name=...)` and close with `.otherwise(fn)`."""
        what = f"dispatch {name!r}"
        return DispatchBuilder(
            flow=self,
            name=_node_name(name, "dispatch"),
            type=_recordable(type, what),
            knobs=_knobs(what, knobs),
            branches=(),
            location=_call_site(),
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
                name=_node_name(name, "loop"),
                body=_body(fn, what),
                initial=initial,
                type=_recordable(type, what),
                compensate=_optional_body(compensate, what, "compensate handler"),
                knobs=_knobs(what, knobs),
                location=_call_site(),
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
                name=_node_name(name, "loop_on"),
                schedule=schedule,
                body=_body(fn, what),
                initial=initial,
                type=_recordable(type, what),
                compensate=_optional_body(compensate, what, "compensate handler"),
                knobs=_knobs(what, knobs),
                location=_call_site(),
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
                name=_node_name(name, "foreach"),
                items=_body(items, what, "items function"),
                body=_body(fn, what),
                type=_declared(type, fn, what),
                concurrency=concurrency,
                compensate=_optional_body(compensate, what, "compensate handler"),
                knobs=_knobs(what, knobs),
                location=_call_site(),
            )
        )

    def subflow(self, name: str, child: Flow, mapper: Callable[..., Any]) -> Flow:
        """Embed `child`: `mapper(ctx)` answers the child's inputs as a dict; the child's nodes are keyed
        under `name~` and its record is readable as `ctx.<name>`."""
        what = f"subflow {name!r}"
        return self._add(
            nodes.Subflow(
                name=_node_name(name, "subflow"),
                child=_flow(child, "subflow"),
                mapper=_body(mapper, what, "input mapper"),
                location=_call_site(),
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
        return Flow(self.name, (nodes.Parallel("zip", (self, other), _call_site()),), self.meta)

    @classmethod
    def gather(cls, *flows: Flow) -> Flow:
        """Two to five flows at the same time; all must finish. Named after the first."""
        if not 2 <= len(flows) <= 5:
            raise ValueError(f"Flow.gather takes 2 to 5 flows, got {len(flows)}")
        branches = tuple(_flow(f, "gather") for f in flows)
        return cls(branches[0].name, (nodes.Parallel("gather", branches, _call_site()),), branches[0].meta)

    @classmethod
    def race(cls, a: Flow, b: Flow) -> Flow:
        """Two flows at the same time; the first to produce a value wins. Named after the first."""
        a, b = _flow(a, "race"), _flow(b, "race")
        return cls(a.name, (nodes.Parallel("race", (a, b), _call_site()),), a.meta)


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
            name=_node_name(name, f"{what} .when"),
            condition=_body(cond, what, "condition"),
            body=_body(fn, what),
            location=_call_site(),
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
            name=_node_name(name, f"{what} .otherwise"),
            condition=None,
            body=_body(fn, what),
            location=_call_site(),
        )
        type_ = self.type
        if type_ is None:
            # Every arm annotated alike counts as a declaration, as a single body's annotation does.
            annotations = {repr(declared_return(b.body.fn)) for b in (*self.branches, default)}
            type_ = _declared(None, default.body.fn, what) if len(annotations) == 1 else None
        return self.flow._add(
            nodes.Dispatch(
                name=self.name,
                type=type_,
                branches=self.branches,
                default=default,
                compensate=_optional_body(compensate, what, "compensate handler"),
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
