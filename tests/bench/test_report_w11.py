"""W11's rows in the bench's table: one per page, each against its own target; a failed run reported."""

from __future__ import annotations

from bench import report


def _page(p50: float, p95: float, target: int) -> dict[str, object]:
    return {"url": "/", "ms": {"p50": p50, "p95": p95, "n": 20}, "target_ms": target, "bytes": 1}


def test_w11_rows_hold_page_by_page() -> None:
    run = {
        "rows": 1_000_000,
        "pages": {
            "list": _page(60.0, 149.0, 150),
            "list failed, orders": _page(20.0, 151.0, 150),
            "overview": _page(200.0, 300.0, 300),
            "execution": _page(30.0, 40.0, 150),
        },
    }
    found = report._w11_rows(run)
    assert [(r.workload, r.flowdeck, r.target, r.holds) for r in found] == [
        ("W11", "60.0 / 149.0", "p95 ≤ 150 ms", True),
        ("W11", "20.0 / 151.0", "p95 ≤ 150 ms", False),
        ("W11", "200.0 / 300.0", "p95 ≤ 300 ms", True),
        ("W11", "30.0 / 40.0", "p95 ≤ 150 ms", True),
    ]
    assert found[2].measure == "overview at 1,000,000 rows: server ms p50 / p95 (20 requests)"


def test_w11_says_what_went_wrong() -> None:
    (row,) = report._w11_rows({"error": "RuntimeError: / answered 500"})
    assert (row.flowdeck, row.holds) == ("error: RuntimeError: / answered 500", None)
    (row,) = report._w11_rows(None)
    assert row.flowdeck == "not run"
