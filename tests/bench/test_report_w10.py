"""W10's row in the bench's table: its figure, its target, and a failed run reported as such."""

from __future__ import annotations

from bench import report


def test_w10_row_holds_when_p95_is_within_250_ms() -> None:
    run = {"updates": 50, "gap_s": 0.3, "ms": {"p50": 120.04, "p95": 240.0, "n": 50}}
    assert report._w10_row(run) == report.Row(
        "W10",
        "node committed → DOM shows it (50 updates, 0.3 s apart), ms p50 / p95",
        "120.0 / 240.0",
        "n/a",
        "",
        "p95 ≤ 250 ms",
        True,
    )
    slow = {**run, "ms": {"p50": 200.0, "p95": 251.0, "n": 50}}
    assert report._w10_row(slow).holds is False


def test_w10_row_says_what_went_wrong() -> None:
    row = report._w10_row({"error": "TimeoutError: page never showed s3"})
    assert (row.flowdeck, row.holds) == ("error: TimeoutError: page never showed s3", None)
    assert report._w10_row(None).flowdeck == "not run"


def test_every_workload_has_a_row() -> None:
    workloads = {row.workload for row in report.rows({}, {})}
    assert workloads == set(report.WORKLOADS)
