"""W15 (a rate limit shared by worker processes, issue 31): the harness end to end at a tiny size (every
execution ran its limited step once, the waits were read back, the rows in the table), and the rows'
verdict against the 5 % target.

No assertion on the observed rate of the tiny run: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres


def _w15_run(observed: float) -> dict[str, object]:
    return {
        "rate": 100,
        "processes": 4,
        "executions": 1000,
        "observed_per_s": observed,
        "asked_per_s": 180.0,
        "ratio": observed / 100,
        "cpu_ms_per_execution": 4.5,
        "cpu_share_of_a_core": 0.4,
    }


def test_the_w15_row_holds_within_five_percent_and_not_beyond() -> None:
    held, spent = report._w15_rows(_w15_run(96.0))
    assert (held.flowdeck, held.ratio, held.holds) == ("96.0 (180.0)", "0.960", True)
    assert "100/s over 4 processes, 1,000 executions" in held.measure
    assert spent.flowdeck == "4.50; 0.40"
    assert report._w15_rows(_w15_run(105.1))[0].holds is False
    assert report._w15_rows(_w15_run(94.9))[0].holds is False
    [missing] = report._w15_rows(None)
    assert (missing.flowdeck, missing.holds) == ("not run", None)


@pytest.mark.slow
@pytest.mark.postgres
def test_w15_runs_at_a_tiny_size(tmp_path: Path) -> None:
    require_postgres()
    doc, table = tiny_runs.run_tiny("W15", tmp_path)
    w15 = doc["runs"]["W15/flowdeck"]
    assert "error" not in w15, w15
    assert (w15["executions"], w15["calls"], w15["processes"], w15["rate"]) == (20, 20, 2, 20)
    assert w15["rate_limited_waits"] >= 1  # past the first token, the executions waited for their slots
    assert w15["slots_too_close"] == 0  # two worker processes' takes never shared a token
    rows = [row for row in doc["rows"] if row["workload"] == "W15"]
    assert len(rows) == 2
    assert rows[0]["holds"] is not None
    assert "W15" in table
