"""A view's trace continues into the flow it starts, through the application client and the tasks
backend, on SQLite and PostgreSQL: the start span is a child of the view's span, its W3C context is stored
with the execution in the caller's transaction, and workers on another engine (another host, with a tracer
provider of their own) run the attempt as its child. The process's engine gets the test's provider (its
`tracing`); no global provider is set."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flowdeck.console import client, runtime, task_flows
from flowdeck.engine import tracing
from flowdeck.store import spi
from tests.console import task_funcs
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
)


class Host:
    """One process's tracer provider and what it exported."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.exporter.get_finished_spans() if s.name == name]
        assert len(found) == 1, f"{name!r} in {[s.name for s in self.exporter.get_finished_spans()]}"
        return found[0]


@pytest.fixture
def web(alias: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    """The web process: the client's engine traces to a provider of the test's own."""
    host = Host()
    monkeypatch.setattr(runtime.served_engine(), "tracing", tracing.Tracing(host.provider))
    yield host
    host.provider.shutdown()


def _span(host: Host, name: str) -> Any:
    """A view's span, current while it runs (what a request's instrumentation opens)."""
    return host.provider.get_tracer("view").start_as_current_span(name)


def _ids(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def _parent(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _carried(eid: str, kind: spi.EventKind) -> dict[str, Any]:
    """The trace context stored on the execution's first event of `kind`."""
    events = client.blocking_read("history", lambda: runtime.store().get_history(eid))
    return next(dict(e.data.get(tracing.CARRIER, {})) for e in events.events if e.kind is kind)


def _traceparent(span: ReadableSpan) -> str:
    """The W3C header naming `span` (its flags as the SDK set them: sampled, random trace id)."""
    assert span.context is not None
    trace_id, span_id, flags = span.context.trace_id, span.context.span_id, span.context.trace_flags
    return f"00-{trace_id:032x}-{span_id:016x}-{flags:02x}"


def test_a_start_in_the_view_s_transaction_runs_as_a_child_of_its_span_on_another_host(
    alias: str, web: Host
) -> None:
    worker = Host()
    workers = Workers(alias, timedelta(seconds=30), tracer_provider=worker.provider)
    try:
        with _span(web, "POST /greet") as view, transaction.atomic(using=alias):
            eid = client.start("greet", name="ada")
        assert client.result(eid, timeout=20)["greeting"] == "hello ada"
    finally:
        workers.stop()
    start = web.one("StartFlow:greet")
    attempt = worker.one("RunAttempt:greet")
    assert _parent(start) == view.get_span_context().span_id
    assert _carried(eid, spi.EventKind.CREATED) == {"traceparent": _traceparent(start)}
    assert (_ids(attempt)[0], _parent(attempt)) == (view.get_span_context().trace_id, _ids(start)[1])
    assert worker.one("RunNode:greeting").parent.span_id == _ids(attempt)[1]  # type: ignore[union-attr]


def test_a_start_outside_a_transaction_carries_the_caller_s_trace_onto_the_client_s_loop(
    alias: str, web: Host
) -> None:
    with web.provider.get_tracer("view").start_as_current_span("POST /greet") as view:
        eid = client.start("greet", name="bo")
    start = web.one("StartFlow:greet")
    assert _parent(start) == view.get_span_context().span_id
    assert _carried(eid, spi.EventKind.CREATED) == {"traceparent": _traceparent(start)}


def test_a_signal_in_the_view_s_transaction_is_a_span_of_the_view_stored_with_the_delivery(
    alias: str, web: Host
) -> None:
    eid = client.start("approval")
    with _span(web, "POST /approve") as view, transaction.atomic(using=alias):
        client.signal(eid, "approved", True)
    delivery = web.one("SignalFlow:approved")
    assert _parent(delivery) == view.get_span_context().span_id
    assert _carried(eid, spi.EventKind.INPUT_RECEIVED) == {"traceparent": _traceparent(delivery)}


def test_an_enqueue_is_a_span_of_the_caller_and_its_start_is_under_it(
    alias: str, web: Host, settings: Any
) -> None:
    settings.TASKS = {"default": {"BACKEND": "flowdeck.console.tasks.FlowdeckBackend"}}
    found = task_flows.flows_in(task_funcs.__name__)
    worker = Host()
    flows = {path: versions[-1] for path, versions in found.items()}
    workers = Workers(alias, timedelta(seconds=30), flows, tracer_provider=worker.provider)
    try:
        with _span(web, "POST /sum") as view, transaction.atomic(using=alias):
            result = task_funcs.add.enqueue(2, 3)
        assert client.result(result.id, timeout=20)["return_value"] == 5
    finally:
        workers.stop()
    path = task_funcs.add.module_path
    enqueue, start = web.one(f"EnqueueTask:{path}"), web.one(f"StartFlow:{path}")
    attempt = worker.one(f"RunAttempt:{path}")
    assert (_parent(enqueue), _parent(start), _parent(attempt)) == (
        view.get_span_context().span_id,
        _ids(enqueue)[1],
        _ids(start)[1],
    )
    assert (enqueue.attributes or {}).get(tracing.EXECUTION_ID) == result.id


def test_without_a_provider_the_client_stores_no_trace_context(alias: str) -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    with transaction.atomic(using=alias):
        eid = client.start("greet", name="cy")
    assert _carried(eid, spi.EventKind.CREATED) == {}
