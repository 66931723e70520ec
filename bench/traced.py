"""A bench worker's OpenTelemetry SDK, for W18's traced rounds (`bench/traced_w1.py`): set in the worker
process by `bench.worker` when `TRACING` is in its environment, as a project sets its provider."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

TRACING = "FLOWDECK_BENCH_TRACING"
"""In a worker's environment: set the SDK's tracer provider (batch processor, in-memory exporter)."""
RATIO = "FLOWDECK_BENCH_TRACE_RATIO"
"""In a traced worker's environment: the share of traces its sampler keeps (default all)."""
SPANS = "FLOWDECK_BENCH_SPANS"
"""In a traced worker's environment: the file it writes its count of exported spans to, per batch."""


def install_tracing() -> None:
    """A traced worker's global tracer provider; its exporter writes how many spans it took to `SPANS`."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    path = os.environ.get(SPANS)

    class Counting(InMemorySpanExporter):
        """The in-memory exporter, counting what it took. The count is written from the batch processor's
        own thread as each batch arrives, not from the spans' path: a processor of its own on the provider
        would add a call per span start and end, and a polling thread wake-ups, to what the round measures."""

        exported = 0

        def export(self, spans: Any) -> SpanExportResult:
            result = super().export(spans)
            Counting.exported += len(spans)
            if path:
                Path(path).write_text(str(Counting.exported))
            return result

    provider = TracerProvider(sampler=sampler(float(os.environ.get(RATIO, "1"))))
    provider.add_span_processor(BatchSpanProcessor(Counting()))
    trace.set_tracer_provider(provider)


def sampler(ratio: float) -> Any:
    """The SDK's default sampler (a child follows its parent) keeping `ratio` of new traces."""
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    return ParentBased(TraceIdRatioBased(ratio))
