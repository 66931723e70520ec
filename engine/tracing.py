"""OpenTelemetry traces of starts, attempts and nodes, through `opentelemetry-api` only.

The engine calls this small interface and nothing else of OpenTelemetry: `Tracing.starting` around a start,
an enqueue or a signal (in the caller's context); `Tracing.attempt` once per attempt, answering an
`Attempt` whose `node` brackets each try of a node's body, whose `wait` notes a sleep or wait as a span
event, and whose `unwinding` brackets the unwind.

Nothing measurable when no tracer provider is configured. The API's no-op tracer still costs about 5 µs
per span on this machine (a span object, a context attach and detach), a few per cent of a node's CPU on
the hot path; so whether tracing is on is decided once per start and once per attempt (`Tracing.tracer`:
the provider is the API's proxy or no-op, so no SDK is set), and an attempt without it gets `OFF`, whose
methods start no span. What stays on is the log context of a running node (a context variable, set and
reset per try), which `NodeLogFilter` copies onto log records.

The trace travels with the execution: a start injects the W3C trace context of its span (the API's
propagator) into the Created event's payload (`CARRIER`, no migration: a payload may carry keys beyond its
kind's), and every attempt, on whatever host and after whatever crash, reads it back from the history it
reads anyway and starts its span as a child of that start span. A signal's delivery is a span in the
sender's trace whose context rides on the InputReceived event; the attempt that consumes the delivery
links to it. The execution's spans stay one tree under its start, and each delivery stays in its sender's
trace (a request handler's), joined by the link: a sender's trace would otherwise gain the whole
execution's remaining work, and the execution's trace would split at every signal.

Attribute names are Flowdeck's own under `flowdeck.` (below); span names follow Temporal's habit of
`Verb:name` (`StartFlow:orders`, `RunAttempt:orders`, `RunNode:charge`, `Compensate:charge`).

What is the same for every span of an attempt (execution id, workflow id and version, executor, attempt
number) is on the attempt's span only; a node's span carries its key and try number from its start (so a
sampler and a processor's `on_start` see them) and its outcome at its end, nothing else unless it failed.
Each attribute costs the SDK 1.5–3 µs of checks on the bench machine, where a bare span costs about 19
(`bench/PROFILE.md`, eighth pass), and a viewer finds the rest one level up, on the node's parent.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from flowdeck.engine import outcomes
from flowdeck.engine.errors import FlowCancelled, FlowDomainError
from flowdeck.store import spi

__all__ = [
    "CARRIER",
    "OFF",
    "UNTRACED",
    "Attempt",
    "NodeLogFilter",
    "Started",
    "Tracing",
    "current_node",
]

SCOPE = "flowdeck"
"""The instrumentation scope's name, as a trace viewer shows it."""

CARRIER = "trace"
"""The payload key of a Created or InputReceived event holding the starter's trace context (W3C headers)."""

EXECUTION_ID = "flowdeck.execution.id"
WORKFLOW_ID = "flowdeck.workflow.id"
WORKFLOW_HASH = "flowdeck.workflow.hash"
EXECUTOR_ID = "flowdeck.executor.id"
ATTEMPT = "flowdeck.attempt"
"""The execution's attempt number, 1-based: how many claims it has had, this one included."""
NODE_KEY = "flowdeck.node.key"
NODE_ATTEMPT = "flowdeck.node.attempt"
"""The node's try number, 1-based, counted across attempts (the StepRetried events in history)."""
OUTCOME = "flowdeck.outcome"
FAILURE_KIND = "flowdeck.failure.kind"
STOP_CODE = "flowdeck.stop.code"
INPUT_NAME = "flowdeck.input.name"
UNWIND_CAUSE = "flowdeck.unwind.cause"
WAKE_AT = "flowdeck.wake.at"

_node: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("flowdeck_node", default=None)


def current_node() -> tuple[str, str] | None:
    """(execution id, node key) of the node whose body runs in this context, else None."""
    return _node.get()


class NodeLogFilter(logging.Filter):
    """Puts `execution_id` and `node_key` on every log record made while a node's body runs (a step's own
    logger included, sync bodies too: their threads run in the node's context). Add it to a handler
    (Django's `LOGGING["filters"]`); a record that already carries the attribute keeps its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        node = _node.get()
        if node is not None:
            if not hasattr(record, "execution_id"):
                record.execution_id = node[0]
            if not hasattr(record, "node_key"):
                record.node_key = node[1]
        return True


# ------------------------------------------------------------------------------------------ tracing


class Tracing:
    """Where an engine's spans go: `provider`, or the API's global one (None), looked up at each start and
    attempt, so a provider set after the engine was built is used from then on."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self._provider = provider
        self._cached: tuple[TracerProvider, Tracer] | None = None

    def tracer(self) -> Tracer | None:
        """The tracer, or None when no SDK is configured (the API's proxy or no-op provider)."""
        provider = self._provider or trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        cached = self._cached
        if cached is None or cached[0] is not provider:
            cached = self._cached = (provider, provider.get_tracer(SCOPE))
        return cached[1]

    @contextlib.contextmanager
    def starting(
        self, verb: str, name: str, attributes: Mapping[str, str] | None = None
    ) -> Iterator[Started]:
        """A span in the caller's context around a start (`StartFlow`), an enqueue (`EnqueueTask`) or a
        delivery (`SignalFlow`); its `carrier()` is what the write stores. An exception ends it ERROR."""
        tracer = self.tracer()
        if tracer is None:
            yield _NOT_STARTED
            return
        named = f"{verb}:{name}"
        with tracer.start_as_current_span(named, kind=SpanKind.PRODUCER, attributes=attributes) as span:
            yield Started(span)

    def attempt(
        self,
        state: spi.ExecutionState,
        history: Sequence[spi.Event],
        executor_id: str,
        *,
        opened: bool,
        began: int | None = None,
    ) -> Attempt:
        """The span of one attempt at `state`'s execution (no span when tracing is off): a child of the
        start span the history's Created event names, linked to the deliveries since the last claim.
        `opened`: the history holds this attempt's claim already (a start that runs here); `began`: when
        the attempt began (ns since the epoch; default now)."""
        tracer = self.tracer()
        if tracer is None:
            return Attempt(None, None, state.execution_id)
        claims, parent, links = 0, None, []
        for event in history:
            carrier = event.data.get(CARRIER)
            if event.kind is spi.EventKind.EXECUTION_CLAIMED:
                claims += 1
                links.clear()  # deliveries an earlier attempt consumed are linked from that attempt
            elif carrier and event.kind is spi.EventKind.CREATED:
                parent = propagate.extract(carrier)
            elif carrier and event.kind is spi.EventKind.INPUT_RECEIVED:
                linked = trace.get_current_span(propagate.extract(carrier)).get_span_context()
                links.append(Link(linked, {INPUT_NAME: event.data.get("input_name", "")}))
        eid = state.execution_id
        attributes = {
            EXECUTION_ID: eid,
            WORKFLOW_ID: state.flow_id,
            WORKFLOW_HASH: state.hash,
            EXECUTOR_ID: executor_id,
            ATTEMPT: claims if opened else claims + 1,
        }
        span = tracer.start_span(
            f"RunAttempt:{state.flow_id}",
            context=parent if parent is not None else otel_context.Context(),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
            start_time=began,
        )
        # Sampled out (the project's sampler said no): its nodes would be too, so none is made; the span
        # is still current, so what a body starts stays in the trace, unsampled
        return Attempt(tracer if span.is_recording() else None, span, eid)


class Started:
    """A start's span: the trace context its write stores, and the execution id once known."""

    def __init__(self, span: Span | None) -> None:
        self._span = span

    def carrier(self) -> dict[str, str]:
        """The W3C headers of the start span (empty when tracing is off: nothing is stored)."""
        if self._span is None:
            return {}
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier

    def execution(self, execution_id: str) -> None:
        if self._span is not None:
            self._span.set_attribute(EXECUTION_ID, execution_id)


_NOT_STARTED = Started(None)


# ------------------------------------------------------------------------------------------ attempts


class Node:
    """One try of a node's body (or of a compensation): its span when tracing is on, and the log context
    either way. `enter` before awaiting the body, `leave` after it, in the same task; `end` once the
    outcome is decided (the try's exception, and what the schedule made of it)."""

    __slots__ = ("_key", "_span", "_token", "_traced")

    def __init__(self, execution_id: str, path: str, span: Span | None) -> None:
        self._key = (execution_id, path)
        self._span = span
        self._token: contextvars.Token[tuple[str, str] | None] | None = None
        self._traced: object = None

    def enter(self) -> None:
        self._token = _node.set(self._key)
        if self._span is not None:
            self._traced = otel_context.attach(trace.set_span_in_context(self._span))

    def leave(self) -> None:
        if self._traced is not None:
            otel_context.detach(self._traced)  # type: ignore[arg-type]
            self._traced = None
        if self._token is not None:
            _node.reset(self._token)
            self._token = None

    def end(self, error: BaseException | None = None, *, outcome: str = "", code: str = "") -> None:
        """End the span: completed when `error` is None, else as `error` says; `outcome` and `code` say what
        the schedule made of it ("retried"; "stopped" with F0001 or F0003)."""
        span = self._span
        if span is None:
            return
        if error is None and not outcome:  # most tries: nothing to judge
            span.set_attribute(OUTCOME, "completed")
            span.end()
        else:
            _close(span, error, outcome, code)


def _close(span: Span, error: BaseException | None, outcome: str = "", code: str = "") -> None:
    """Set the outcome, failure kind or stop code and status of `span` from `error`, and end it. The outcome
    alone goes by `set_attribute`; with a kind or a code, all in one `set_attributes`. Every call takes the
    span's lock; the SDK checks a mapping as a whole before its values, about 1.5 µs more than one value
    alone (`bench/PROFILE.md`, eighth pass)."""
    word, kind, stop = _judge(error)
    word = outcome or word
    stop = code or stop
    if kind or stop:
        attributes = {OUTCOME: word}
        if kind:
            attributes[FAILURE_KIND] = kind
        if stop:
            attributes[STOP_CODE] = stop
        span.set_attributes(attributes)
    else:
        span.set_attribute(OUTCOME, word)
    if error is not None and word not in ("parked", "abandoned"):
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, str(error)[:200] or type(error).__name__))
    span.end()


def _judge(error: BaseException | None) -> tuple[str, str, str]:
    """(outcome word, failure kind, stop code) of a try that ended with `error`."""
    match error:
        case None:
            return "completed", "", ""
        case outcomes.Parked():
            return "parked", "", ""
        case outcomes.StopFor():
            cause = error.__cause__
            return "stopped", type(cause).__name__ if cause is not None else "", error.stopped.code
        case FlowCancelled():
            return "cancelled", "", ""
        case FlowDomainError():
            return "failed", type(error).__name__, ""
        case outcomes.ClaimLost() | outcomes.Halt() | outcomes.ResumedUnwind() | spi.FlowStoreError():
            return "abandoned", "", ""
        case Exception():
            return "error", type(error).__name__, ""
    return "abandoned", "", ""  # cancelled with its task (a lost claim, a shutdown)


class Attempt:
    """An attempt's span and the spans under it. `enter`/`leave` make it current for the walk."""

    def __init__(self, tracer: Tracer | None, span: Span | None, execution_id: str) -> None:
        self._tracer = tracer
        self._span = span
        self.execution_id = execution_id

    def enter(self) -> object:
        return None if self._span is None else otel_context.attach(trace.set_span_in_context(self._span))

    def leave(self, token: object) -> None:
        if token is not None:
            otel_context.detach(token)  # type: ignore[arg-type]

    def node(self, path: str, attempt: int, *, compensation: bool = False) -> Node:
        """A try of node `path` (`attempt`: retries before it), a child of the current span."""
        if self._tracer is None:
            return Node(self.execution_id, path, None)
        verb = "Compensate" if compensation else "RunNode"
        attributes = {NODE_KEY: path, NODE_ATTEMPT: attempt + 1}  # the execution's id is on its attempt
        return Node(self.execution_id, path, self._tracer.start_span(f"{verb}:{path}", attributes=attributes))

    def wait(self, path: str, event: spi.Event, wake: spi.Wake) -> None:
        """A sleep, a wait for input or a durable retry back-off begins: an event on the attempt's span."""
        if self._span is None:
            return
        attributes: dict[str, Any] = {NODE_KEY: path}
        if isinstance(wake, spi.WakeAt):
            attributes[WAKE_AT] = wake.at.isoformat()
        self._span.add_event(f"flowdeck.{event.kind.value}", attributes)

    @contextlib.contextmanager
    def unwinding(self, cause: spi.Cause) -> Iterator[Unwinding]:
        """The unwind as a span of its own, current while its compensations run (their spans are its
        children); `Unwinding.ended` takes the outcome it reached."""
        if self._tracer is None:
            yield Unwinding(None)
            return
        attributes = {EXECUTION_ID: self.execution_id, UNWIND_CAUSE: type(cause).__name__}
        span = self._tracer.start_span("Unwind", attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span))
        unwinding = Unwinding(span)
        try:
            yield unwinding
        except BaseException as error:
            _close(span, error)
            raise
        finally:
            otel_context.detach(token)
        unwinding.close()

    def end(self, report: outcomes.AttemptReport, outcome: spi.ClaimOutcome | None = None) -> None:
        """End the attempt's span with the report's word (completed, failed, suspended, stopped, …)."""
        span = self._span
        if span is None:
            return
        span.set_attribute(OUTCOME, report.outcome)
        _mark(span, outcome)
        if report.outcome in ("failed", "stopped"):
            span.set_status(Status(StatusCode.ERROR, report.detail[:200]))
        span.end()

    def fail(self, error: BaseException) -> None:
        """End the attempt's span for an attempt that ended by an exception (the store, a cancelled task)."""
        if self._span is not None:
            _close(self._span, error)


def _mark(span: Span, outcome: spi.ClaimOutcome | None) -> None:
    """The failure kind or stop code of an attempt's or unwind's outcome on its span."""
    match outcome:
        case spi.Terminal(spi.Failed(_, kind), _):
            span.set_attribute(FAILURE_KIND, kind)
        case spi.Stop(stopped, _):
            span.set_attribute(STOP_CODE, stopped.code)


class Unwinding:
    """The unwind's span, ended with the outcome the unwind reached."""

    def __init__(self, span: Span | None) -> None:
        self._span = span
        self._outcome: spi.ClaimOutcome | None = None

    def ended(self, outcome: spi.ClaimOutcome) -> spi.ClaimOutcome:
        self._outcome = outcome
        return outcome

    def close(self) -> None:
        span = self._span
        if span is None:
            return
        words = {spi.Terminal: "completed", spi.Suspended: "parked", spi.Stop: "stopped"}
        span.set_attribute(OUTCOME, words.get(type(self._outcome), "abandoned"))
        _mark(span, self._outcome)
        if isinstance(self._outcome, spi.Stop):
            span.set_status(Status(StatusCode.ERROR, self._outcome.stopped.reason[:200]))
        span.end()


OFF = Attempt(None, None, "")
"""No attempt's trace at all (a dry run's walk): no span, and no execution id for the log context."""

UNTRACED = Tracing(trace.NoOpTracerProvider())
"""Tracing that is always off: its attempts keep only the nodes' log context."""


def signalling(execution_id: str, name: str) -> dict[str, str]:
    """A delivery span's attributes."""
    return {EXECUTION_ID: execution_id, INPUT_NAME: name}


def carried(data: Mapping[str, Any], carrier: Mapping[str, str]) -> dict[str, Any]:
    """An event payload with the trace context added when there is one (nothing stored when off)."""
    return {**data, CARRIER: dict(carrier)} if carrier else dict(data)
