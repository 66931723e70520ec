"""OpenTelemetry traces (engine/tracing.py): the spans of a start, its attempts and nodes, as the SDK's
in-memory exporter records them. Each test builds its own `TracerProvider` and hands it to its engines, so
no global provider is set (it could be set once per process only, and would leak into other tests)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode

from flowdeck.engine import Flow, FlowDomainError, FlowRetry, Schedule, tracing
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.memory import MemoryStore
from tests.engine.engine_support import LEASE, advance, make_engine, until, waiting_for
from tests.store.django_support import sqlite_alias  # noqa: F401


@dataclass
class Traces:
    """A tracer provider of the test's own (one "host") and what it exported."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    @classmethod
    def new(cls) -> Traces:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider, exporter)

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.exporter.get_finished_spans() if s.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in self.spans()]}"
        return found[0]

    @property
    def tracer(self) -> trace.Tracer:
        return self.provider.get_tracer("tests")


@pytest.fixture
def traces() -> Iterator[Traces]:
    made = Traces.new()
    yield made
    made.provider.shutdown()


def parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def sid(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def tid(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def attrs(span: ReadableSpan, *names: str) -> dict[str, Any]:
    found = span.attributes or {}
    return {name: found.get(f"flowdeck.{name}") for name in names}


def engine(store: spi.FlowStore, clock: ManualClock, flows: Sequence[Flow], traces: Traces) -> FlowEngine:
    return make_engine(store, clock, flows, tracer_provider=traces.provider)


class OutOfStock(FlowDomainError):
    """Nothing left to sell."""


# ---------------------------------------------------------------------------------------------- runs


async def test_a_view_s_trace_continues_into_the_flow_and_a_retried_step_has_a_span_per_try(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    calls: Counter[str] = Counter()

    def flaky(ctx: object) -> None:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise FlowRetry("busy")

    flow = (
        Flow.init("orders")
        .step("reserve", lambda ctx: None)
        .step("charge", flaky, retry=Schedule.fixed(timedelta(0)).take(2))
    )
    async with engine(memory_store, clock, [flow], traces) as running:
        with traces.tracer.start_as_current_span("POST /orders") as view:
            eid = await running.workflows.start("orders")
        assert (await until(memory_store, eid)).status == spi.Completed()
    view_id = view.get_span_context()
    start = traces.one("StartFlow:orders")
    attempt = traces.one("RunAttempt:orders")
    nodes = traces.spans("RunNode:")
    assert (tid(start), parent(start)) == (view_id.trace_id, view_id.span_id)
    assert (tid(attempt), parent(attempt)) == (view_id.trace_id, sid(start))
    assert attrs(start, "workflow.id", "execution.id") == {"workflow.id": "orders", "execution.id": eid}
    assert attrs(attempt, "execution.id", "attempt", "outcome") == {
        "execution.id": eid,
        "attempt": 1,
        "outcome": "completed",
    }
    assert [(s.name, attrs(s, "node.key", "node.attempt", "outcome")) for s in nodes] == [
        ("RunNode:reserve", {"node.key": "reserve", "node.attempt": 1, "outcome": "completed"}),
        ("RunNode:charge", {"node.key": "charge", "node.attempt": 1, "outcome": "retried"}),
        ("RunNode:charge", {"node.key": "charge", "node.attempt": 2, "outcome": "completed"}),
    ]
    assert {parent(s) for s in nodes} == {sid(attempt)}
    assert [s.status.status_code for s in nodes] == [StatusCode.UNSET, StatusCode.ERROR, StatusCode.UNSET]


async def test_a_durable_back_off_makes_a_second_attempt_under_the_same_start(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    calls: Counter[str] = Counter()

    def flaky(ctx: object) -> None:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise FlowRetry("down")

    flow = Flow.init("slow").step("call", flaky, retry=Schedule.fixed(timedelta(minutes=5)).take(2))
    async with engine(memory_store, clock, [flow], traces) as running:
        eid = await running.workflows.start("slow")
        await until(memory_store, eid, waiting_for("call#retry1"))
        await advance(clock, timedelta(minutes=5))
        assert (await until(memory_store, eid)).status == spi.Completed()
    start = traces.one("StartFlow:slow")
    attempts = traces.spans("RunAttempt:")
    assert [(attrs(a, "attempt", "outcome"), parent(a), tid(a)) for a in attempts] == [
        ({"attempt": 1, "outcome": "suspended"}, sid(start), tid(start)),
        ({"attempt": 2, "outcome": "completed"}, sid(start), tid(start)),
    ]
    waited = [(e.name, dict(e.attributes or {})) for e in attempts[0].events]
    assert waited == [
        (
            "flowdeck.StepRetried",
            {"flowdeck.node.key": "call#retry1", "flowdeck.wake.at": "2030-01-01T00:05:00+00:00"},
        )
    ]
    tries = traces.spans("RunNode:call")
    assert [(attrs(s, "node.attempt", "outcome"), parent(s)) for s in tries] == [
        ({"node.attempt": 1, "outcome": "retried"}, sid(attempts[0])),
        ({"node.attempt": 2, "outcome": "completed"}, sid(attempts[1])),
    ]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_alias(request: pytest.FixtureRequest) -> str | None:
    """None for the memory store, else the migrated alias (resolved here, outside the event loop)."""
    if request.param == "memory":
        return None
    alias = str(request.getfixturevalue(f"{request.param}_alias"))
    request.getfixturevalue("database_access")
    return alias


@pytest.fixture
async def any_store(any_alias: str | None, clock: ManualClock) -> AsyncIterator[spi.FlowStore]:
    """The memory store, and the Django store on SQLite and PostgreSQL: the trace context goes through the
    real store's history (written by the starter, read back by the attempt that recovers the execution)."""
    if any_alias is None:
        yield MemoryStore(clock)
        return
    store = DjangoStore(any_alias, clock)
    store.reset()
    try:
        yield store
    finally:
        await store.aclose()


async def test_a_crashed_worker_s_execution_recovered_on_another_host_stays_in_the_caller_s_trace(
    any_store: spi.FlowStore, clock: ManualClock
) -> None:
    """The starter, the worker that dies and the worker that recovers are three hosts: three providers."""
    caller, doomed_host, rescuer_host = Traces.new(), Traces.new(), Traces.new()
    calls: Counter[str] = Counter()
    hang = asyncio.Event()

    async def second(ctx: object) -> int:
        calls["second"] += 1
        if calls["second"] == 1:
            await hang.wait()  # the worker dies here
        return 2

    flow = Flow.init("crash").output("first", lambda ctx: 1, type=int).output("second", second, type=int)
    starter = FlowEngine(any_store, [flow], clock=clock, tracer_provider=caller.provider)
    await starter.register("crash", flow)  # a web process: it serves the version, runs no workers
    with caller.tracer.start_as_current_span("POST /checkout") as view:
        eid = await starter.workflows.start("crash")
    async with engine(any_store, clock, [flow], doomed_host):
        await until(any_store, eid, lambda s: calls["second"] == 1)
    async with engine(any_store, clock, [flow], rescuer_host):
        await advance(clock, LEASE)  # the dead worker's lease lapses
        assert (await until(any_store, eid)).status == spi.Completed()
    start = caller.one("StartFlow:crash")
    assert parent(start) == view.get_span_context().span_id
    dead, rescued = doomed_host.one("RunAttempt:crash"), rescuer_host.one("RunAttempt:crash")
    assert [(tid(a), parent(a), attrs(a, "attempt", "outcome")) for a in (dead, rescued)] == [
        (tid(start), sid(start), {"attempt": 1, "outcome": "abandoned"}),
        (tid(start), sid(start), {"attempt": 2, "outcome": "completed"}),
    ]
    assert [(s.name, attrs(s, "outcome"), parent(s)) for s in doomed_host.spans("RunNode:")] == [
        ("RunNode:first", {"outcome": "completed"}, sid(dead)),
        ("RunNode:second", {"outcome": "abandoned"}, sid(dead)),
    ]
    assert [(s.name, parent(s), tid(s)) for s in rescuer_host.spans("RunNode:")] == [
        ("RunNode:second", sid(rescued), tid(start))
    ]


async def test_a_failure_is_an_error_with_its_kind_and_the_unwind_has_spans_of_its_own(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    undone: list[str] = []

    def sell(ctx: object) -> None:
        raise OutOfStock("no widgets")

    flow = (
        Flow.init("shop")
        .step("reserve", lambda ctx: None, compensate=lambda ctx: undone.append("reserve"))
        .step("sell", sell)
    )
    async with engine(memory_store, clock, [flow], traces) as running:
        eid = await running.workflows.start("shop")
        assert (await until(memory_store, eid)).status == spi.Failed("no widgets", "OutOfStock")
    attempt, unwind = traces.one("RunAttempt:shop"), traces.one("Unwind")
    sold, undo = traces.one("RunNode:sell"), traces.one("Compensate:reserve")
    assert undone == ["reserve"]
    assert attrs(sold, "outcome", "failure.kind") == {"outcome": "failed", "failure.kind": "OutOfStock"}
    assert (sold.status.status_code, sold.status.description) == (StatusCode.ERROR, "no widgets")
    assert [e.name for e in sold.events] == ["exception"]
    assert (parent(unwind), parent(undo), parent(sold)) == (sid(attempt), sid(unwind), sid(attempt))
    assert attrs(unwind, "unwind.cause", "outcome", "failure.kind") == {
        "unwind.cause": "Failure",
        "outcome": "completed",
        "failure.kind": "OutOfStock",
    }
    assert attrs(undo, "node.key", "outcome") == {"node.key": "reserve", "outcome": "completed"}
    assert attrs(attempt, "outcome", "failure.kind") == {"outcome": "failed", "failure.kind": "OutOfStock"}
    assert attempt.status.status_code is StatusCode.ERROR


async def test_a_mistake_stops_with_its_code_on_the_node_and_the_attempt(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    def broken(ctx: object) -> None:
        raise KeyError("sku")

    flow = Flow.init("buggy").step("broken", broken)
    async with engine(memory_store, clock, [flow], traces) as running:
        eid = await running.workflows.start("buggy")
        await until(memory_store, eid, lambda s: isinstance(s.status, spi.Stopped))
    node, attempt = traces.one("RunNode:broken"), traces.one("RunAttempt:buggy")
    assert attrs(node, "outcome", "stop.code", "failure.kind") == {
        "outcome": "stopped",
        "stop.code": "F0001",
        "failure.kind": "KeyError",
    }
    assert node.status.status_code is StatusCode.ERROR
    assert attrs(attempt, "outcome", "stop.code") == {"outcome": "stopped", "stop.code": "F0001"}
    assert attempt.status.status_code is StatusCode.ERROR


async def test_sleeps_and_waits_are_events_and_a_signal_s_attempt_links_to_its_delivery(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    flow = (
        Flow.init("approve")
        .sleep("cool_off", timedelta(hours=1))
        .input("ok", bool)
        .step("go", lambda ctx: None)
    )
    async with engine(memory_store, clock, [flow], traces) as running:
        eid = await running.workflows.start("approve")
        await until(memory_store, eid, waiting_for("cool_off"))
        await advance(clock, timedelta(hours=1))
        await until(memory_store, eid, waiting_for("ok"))
        with traces.tracer.start_as_current_span("POST /approve") as webhook:
            await running.executions.signal(eid, "ok", True)
        assert (await until(memory_store, eid)).status == spi.Completed()
    start, delivery = traces.one("StartFlow:approve"), traces.one("SignalFlow:ok")
    attempts = traces.spans("RunAttempt:")
    assert [e.name for a in attempts for e in a.events] == ["flowdeck.SleepStarted", "flowdeck.InputWaiting"]
    assert {parent(a) for a in attempts} == {sid(start)}
    assert (tid(delivery), parent(delivery)) == (
        webhook.get_span_context().trace_id,
        webhook.get_span_context().span_id,
    )
    assert attrs(delivery, "execution.id", "input.name") == {"execution.id": eid, "input.name": "ok"}
    assert [[(link.context.span_id, dict(link.attributes or {})) for link in a.links] for a in attempts] == [
        [],
        [],
        [(sid(delivery), {"flowdeck.input.name": "ok"})],
    ]


async def test_a_step_s_log_records_carry_its_execution_and_node(
    memory_store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """With tracing off: the log context does not depend on spans. A sync body runs on a body thread."""

    def shout(ctx: object) -> None:
        logging.getLogger("shop.steps").warning("charging")

    async def whisper(ctx: object) -> None:
        logging.getLogger("shop.steps").warning("shipping")

    flow = Flow.init("logs").step("charge", shout).step("ship", whisper)
    caplog.handler.addFilter(tracing.NodeLogFilter())
    async with make_engine(memory_store, clock, [flow]) as running:
        eid = await running.workflows.start("logs")
        await until(memory_store, eid)
    logging.getLogger("shop.steps").warning("after")
    seen = [
        (r.getMessage(), getattr(r, "execution_id", None), getattr(r, "node_key", None))
        for r in caplog.records
        if r.name == "shop.steps"
    ]
    assert seen == [("charging", eid, "charge"), ("shipping", eid, "ship"), ("after", None, None)]


async def test_with_no_provider_configured_nothing_is_recorded_or_stored(
    memory_store: MemoryStore, clock: ManualClock, traces: Traces
) -> None:
    """The process's global provider is the API's proxy (no SDK set): the engine makes no span at all and
    stores no trace context, even inside a caller's span of another provider."""
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert tracing.Tracing().tracer() is None
    calls: Counter[str] = Counter()

    def flaky(ctx: object) -> None:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise FlowRetry("busy")

    flow = Flow.init("plain").step("a", flaky, retry=Schedule.fixed(timedelta(0)).take(2))
    async with make_engine(memory_store, clock, [flow]) as running:
        with traces.tracer.start_as_current_span("elsewhere"):
            eid = await running.workflows.start("plain")
        assert (await until(memory_store, eid)).status == spi.Completed()
    history = (await memory_store.get_history(eid)).events
    assert [dict(e.data) for e in history if e.kind is spi.EventKind.CREATED] == [{}]
    assert [s.name for s in traces.spans()] == ["elsewhere"]


async def test_a_span_a_body_opens_is_a_child_of_its_node_s_span_sync_async_or_atomic(
    any_store: spi.FlowStore, clock: ManualClock, traces: Traces
) -> None:
    """The node's span is current while its body runs: on the loop, on a body thread, and for an atomic
    node on the store's thread."""

    def opens(name: str) -> Any:
        def body(ctx: object) -> None:
            with traces.tracer.start_as_current_span(f"call {name}"):
                pass

        return body

    async def opens_async(ctx: object) -> None:
        with traces.tracer.start_as_current_span("call async"):
            pass

    flow = (
        Flow.init("bodies")
        .step("sync", opens("sync"))
        .step("async", opens_async)
        .step("atomic", opens("atomic"), atomic=True)
    )
    async with engine(any_store, clock, [flow], traces) as running:
        eid = await running.workflows.start("bodies")
        assert (await until(any_store, eid)).status == spi.Completed()
    for name in ("sync", "async", "atomic"):
        assert parent(traces.one(f"call {name}")) == sid(traces.one(f"RunNode:{name}")), name


async def test_an_execution_the_sampler_leaves_out_records_nothing_but_keeps_its_trace(
    memory_store: MemoryStore, clock: ManualClock
) -> None:
    """The project's sampler said no at the start: no span is recorded, no node span is even made, and a
    body still runs inside the (unsampled) trace its start began."""
    exporter = InMemorySpanExporter()
    provider = Counting(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[trace.SpanContext] = []

    def look(ctx: object) -> None:
        seen.append(trace.get_current_span().get_span_context())

    flow = Flow.init("quiet").step("look", look)
    async with make_engine(memory_store, clock, [flow], tracer_provider=provider) as running:
        eid = await running.workflows.start("quiet")
        assert (await until(memory_store, eid)).status == spi.Completed()
    created = (await memory_store.get_history(eid)).events[0]
    traceparent = created.data[tracing.CARRIER]["traceparent"]
    assert exporter.get_finished_spans() == ()
    assert provider.started == ["StartFlow:quiet", "RunAttempt:quiet"]
    assert [(f"{c.trace_id:032x}", c.trace_flags.sampled) for c in seen] == [(traceparent[3:35], False)]


class Counting(TracerProvider):
    """The SDK's provider, noting the name of every span its tracers are asked to start."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.started: list[str] = []

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        tracer = super().get_tracer(*args, **kwargs)
        start_span = tracer.start_span

        def noted(name: str, *more: Any, **options: Any) -> Any:
            self.started.append(name)
            return start_span(name, *more, **options)

        tracer.start_span = noted  # type: ignore[method-assign]
        return tracer
