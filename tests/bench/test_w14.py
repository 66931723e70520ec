"""W14 (W1 under one running per key against unlimited W1, issue 31 6): its row in the table, and the
harness end to end at a tiny size (the arms alternate, and the history shows one running per key).

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres


def _w14_run(**overrides: object) -> dict[str, object]:
    run: dict[str, object] = {
        "executions": 10_000,
        "keys": 1000,
        "steps": 10,
        "workers": 8,
        "rounds": [{"limited": False, "nodes_per_s": 3000.0}, {"limited": True, "nodes_per_s": 2700.0}],
        "nodes_per_s_unlimited": 3000.0,
        "nodes_per_s_limited": 2700.0,
        "ratio": 0.9,
        "most_running_per_key": 1,
    }
    return run | overrides


def test_the_w14_row_holds_at_the_target_with_one_per_key() -> None:
    row = report._w14_row(_w14_run())
    assert (row.flowdeck, row.ratio, row.target, row.holds) == (
        "3,000 → 2,700",
        "0.90×",
        "≥ 0.8× unlimited, 1 per key",
        True,
    )
    assert "over 1000 keys" in row.measure
    assert report._w14_row(_w14_run(ratio=0.79)).holds is False
    assert report._w14_row(_w14_run(most_running_per_key=2)).holds is False
    assert report._w14_row(None).flowdeck == "not run"


@pytest.mark.slow
@pytest.mark.postgres
def test_w14_runs_end_to_end_with_one_running_per_key(tmp_path: Path) -> None:
    require_postgres()
    doc, _ = tiny_runs.run_tiny("W14", tmp_path)
    w14 = doc["runs"]["W14/flowdeck"]
    assert "error" not in w14, w14
    assert [r["limited"] for r in w14["rounds"]] == [False, True]  # unlimited, then limited: alternated
    assert w14["most_running_per_key"] == 1
    assert w14["ratio"] == pytest.approx(w14["nodes_per_s_limited"] / w14["nodes_per_s_unlimited"])
    assert [row["workload"] for row in doc["rows"]].count("W14") == 1
