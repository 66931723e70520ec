"""bench/span_cost.py: the per-span rows and the kept/dropped volume rows measure what they name."""

from __future__ import annotations

import gc
import json

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bench import span_cost


def test_the_kept_row_puts_every_node_span_through_the_exporter_and_counts_the_collector_inside_it() -> None:
    exporter = InMemorySpanExporter()
    spent, collecting = span_cost._volume(exporter, 300)
    spans = exporter.get_finished_spans()
    assert len(spans) == 300  # the attempt's own span is left open: only the tries' spans
    assert {span.name for span in spans} == {"RunNode:step1"}
    assert {span.attributes["flowdeck.outcome"] for span in spans if span.attributes} == {"completed"}
    assert 0 <= collecting <= spent


def test_every_row_is_printed_and_in_the_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        span_cost.main(["--spans", "200", "--reps", "1"])
    finally:
        gc.unfreeze()  # it freezes its heap as a worker does; the test process goes on collecting as before
    lines = capsys.readouterr().out.splitlines()
    found = json.loads(lines[-1])
    rows = [
        "untraced node",
        "traced node",
        "SDK span",
        "SDK span, current",
        "SDK span, bare",
        "attempt",
        "dropped",
        "kept",
    ]
    assert all(found[row] > 0 for row in rows)
    assert [line.split("  ")[0] for line in lines[:-1]] == [
        *rows[:7],
        "dropped, collector",
        *rows[7:],
        "kept, collector",
    ]
