"""A bench worker's OpenTelemetry SDK, for W18's traced rounds (`bench/traced_w1.py`): set in the worker
process by `bench.worker` when `TRACING` is in its environment, as a project sets its provider."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

TRACING = "FLOWDECK_BENCH_TRACING"
"""In a worker's environment: set the SDK's tracer provider (batch processor, in-memory exporter)."""
RATIO = "FLOWDECK_BENCH_TRACE_RATIO"
"""In a traced worker's environment: the share of traces its sampler keeps (default all)."""
SPANS = "FLOWDECK_BENCH_SPANS"
"""In a traced worker's environment: the file it writes its count of ended spans to, every 20 ms."""


def install_tracing() -> None:
    """A traced worker's global tracer provider, and a thread writing how many spans ended to `SPANS`."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Counting(SpanProcessor):
        ended = 0

        def on_end(self, span: Any) -> None:
            Counting.ended += 1

    provider = TracerProvider(sampler=sampler(float(os.environ.get(RATIO, "1"))))
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    provider.add_span_processor(Counting())
    trace.set_tracer_provider(provider)
    path = os.environ.get(SPANS)
    if path:

        def report() -> None:
            while True:
                threading.Event().wait(0.02)
                Path(path).write_text(str(Counting.ended))

        threading.Thread(target=report, name="w18-spans", daemon=True).start()


def sampler(ratio: float) -> Any:
    """The SDK's default sampler (a child follows its parent) keeping `ratio` of new traces."""
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    return ParentBased(TraceIdRatioBased(ratio))
