"""Where a traced node's CPU goes (issue 30, W18): Flowdeck's side of a span against the SDK's own calls,
and the garbage collector's share when the exporter keeps every span.

`python -m bench.span_cost [--spans 22000] [--reps 15] [--gc-threshold 700]`

One process, no database, the SDK as W18's traced worker sets it (`TracerProvider`, `BatchSpanProcessor`).
Each figure is CPU time (`time.process_time`, the exporter's thread included) divided by the spans made,
the best of `--reps` repetitions, so a machine busy with other work moves it far less than it moves W18's
throughput. The rows:

- `untraced node`: a node's try with tracing off (its log context only), what both W18 arms pay;
- `traced node`: `Attempt.node`, `Node.enter`, `Node.leave`, `Node.end`, what a traced try adds;
- `SDK span` / `SDK span, current`: the SDK calls that span needs and nothing of Flowdeck's (start with the
  key and try number, the outcome by `set_attribute`, end), and the same with the span made current around
  the body, as the issue's structure requires (a body's own spans are its node's children);
- `SDK span, bare`: a span started and ended with no attribute, the SDK's floor (what the three attributes
  cost is the difference);
- `attempt`: `Tracing.attempt` and `Attempt.end` (the start's context extracted from the Created event);
- `kept`, `dropped`: `--spans` traced node tries, the exporter keeping every span (`InMemorySpanExporter`,
  W18's) or dropping each batch (as an exporter that sends them does), with the collector's own CPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flowdeck.engine import heap, tracing
from flowdeck.engine.outcomes import AttemptReport
from flowdeck.store import spi
from flowdeck.store.status import Running

KEY, TRY, OUTCOME = tracing.NODE_KEY, tracing.NODE_ATTEMPT, tracing.OUTCOME


class Dropping(SpanExporter):
    """An exporter that lets each batch go, as one sending spans elsewhere does."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _provider(exporter: SpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _state(execution_id: str) -> spi.ExecutionState:
    now = datetime.now(UTC)
    return spi.ExecutionState(
        execution_id, "chain10", Running(), "w", None, "h", now, now, {}, False, 1
    )  # fmt: skip


def _created(execution_id: str, carrier: dict[str, str]) -> spi.Event:
    data = tracing.carried({}, carrier)
    return spi.Event(spi.EventKind.CREATED, "chain10", execution_id, datetime.now(UTC), data)


def _best(run: Callable[[int], None], n: int, reps: int, between: Callable[[], None]) -> float:
    """µs of CPU per item: the best of `reps` runs of `run(n)`."""
    best = float("inf")
    for _ in range(reps):
        between()
        began = time.process_time()
        run(n)
        best = min(best, (time.process_time() - began) / n * 1e6)
    return best


def _tries(attempt: tracing.Attempt) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            node = attempt.node("step1", 0)
            node.enter()
            node.leave()
            node.end()

    return run


def _sdk(tracer: Any, parent: otel_context.Context, current: bool) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            span = tracer.start_span("RunNode:step1", parent, attributes={KEY: "step1", TRY: 1})
            if current:
                otel_context.detach(otel_context.attach(trace.set_span_in_context(span, parent)))
            span.set_attribute(OUTCOME, "completed")
            span.end()

    return run


def _bare(tracer: Any, parent: otel_context.Context) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            tracer.start_span("RunNode:step1", parent).end()

    return run


def _attempts(traces: tracing.Tracing, history: list[spi.Event]) -> Callable[[int], None]:
    state, report = _state("e1"), AttemptReport("e1", "completed")

    def run(n: int) -> None:
        for _ in range(n):
            traces.attempt(state, history, "w", opened=False).end(report)

    return run


def _paths(reps: int) -> dict[str, float]:
    """The per-span rows (the exporter emptied between repetitions)."""
    exporter = InMemorySpanExporter()
    provider = _provider(exporter)
    traces = tracing.Tracing(provider)
    tracer = provider.get_tracer(tracing.SCOPE)
    with traces.starting("StartFlow", "chain10") as started:
        history = [_created("e1", started.carrier())]
    attempt = traces.attempt(_state("e1"), history, "w", opened=False)
    token = attempt.enter()
    parent = otel_context.get_current()
    rows = {
        "untraced node": _best(_tries(tracing.Attempt(None, None, "e1")), 5000, reps, exporter.clear),
        "traced node": _best(_tries(attempt), 5000, reps, exporter.clear),
        "SDK span": _best(_sdk(tracer, parent, False), 5000, reps, exporter.clear),
        "SDK span, current": _best(_sdk(tracer, parent, True), 5000, reps, exporter.clear),
        "SDK span, bare": _best(_bare(tracer, parent), 5000, reps, exporter.clear),
        "attempt": _best(_attempts(traces, history), 2000, reps, exporter.clear),
    }
    attempt.leave(token)
    provider.shutdown()
    return rows


def _volume(exporter: SpanExporter, spans: int) -> tuple[float, float]:
    """(µs of CPU, µs of it in the collector) per span over `spans` traced node tries, a fresh provider
    (flushed before the clock stops: every span reached the exporter)."""
    provider = _provider(exporter)
    traces = tracing.Tracing(provider)
    attempt = traces.attempt(_state("e1"), [], "w", opened=False)
    token = attempt.enter()
    collecting, began_gc = [0.0], [0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began_gc[0] = time.thread_time()
        else:
            collecting[0] += time.thread_time() - began_gc[0]

    gc.collect()
    gc.callbacks.append(timed)
    began = time.process_time()
    try:
        _tries(attempt)(spans)
        provider.force_flush()
    finally:
        spent = time.process_time() - began
        gc.callbacks.remove(timed)
        attempt.leave(token)
        provider.shutdown()
    return spent / spans * 1e6, collecting[0] / spans * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.span_cost")
    parser.add_argument("--spans", type=int, default=22000, help="node tries of the kept/dropped rows")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--gc-threshold", type=int, default=0, help="the young generation's (0: as is)")
    ns = parser.parse_args(argv)
    heap.freeze_startup_heap()  # as a worker process does once set up
    if ns.gc_threshold:
        gc.set_threshold(ns.gc_threshold, *gc.get_threshold()[1:])
    rows = _paths(ns.reps)
    dropped, dropped_gc = _volume(Dropping(), ns.spans)
    kept, kept_gc = _volume(InMemorySpanExporter(), ns.spans)
    rows |= {"dropped": dropped, "dropped, collector": dropped_gc, "kept": kept, "kept, collector": kept_gc}
    for name, value in rows.items():
        print(f"{name:20s} {value:7.2f} µs")
    print(json.dumps({"gc_threshold": gc.get_threshold(), **{k: round(v, 2) for k, v in rows.items()}}))


if __name__ == "__main__":
    main()
