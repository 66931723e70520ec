"""W16's row in the bench's report: schedule ticks per second, and the exactness it must keep (one execution
and one tick record per schedule, none twice). The workload itself runs in the bench's smoke run."""

from __future__ import annotations

from typing import Any

from bench import report


def _found(**changed: Any) -> dict[str, Any]:
    return {
        "schedules": 1000,
        "tickers": 2,
        "ticks_per_second": 94.2,
        "executions": 1000,
        "duplicates": 0,
        "exact": True,
        **changed,
    }


def test_the_row_holds_only_when_every_tick_started_once() -> None:
    row = report._w16_row(_found())
    assert (row.workload, row.flowdeck, row.holds) == ("W16", "94", True)
    assert "1,000 schedules due at once, 2 schedulers racing" in row.measure
    assert report._w16_row(_found(duplicates=1, executions=1001)).holds is False
    assert report._w16_row(_found(exact=False)).holds is False


def test_a_failed_or_missing_run_reads_so() -> None:
    assert report._w16_row(None).flowdeck == "not run"
    assert report._w16_row({"error": "RuntimeError: boom"}).holds is None


def test_w16_is_in_the_plan_and_the_report() -> None:
    assert "W16" in report.WORKLOADS
    from bench import run

    planned = {key for _, key, _, _ in run.plan(run.SIZES["tiny"])}
    assert "W16/flowdeck" in planned
