"""W18 (W1 with OpenTelemetry tracing on against off, issue 30 3(b)): its row in the table, and the harness
end to end at a tiny size (the rounds alternate, and a traced round traced every attempt and node).

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres


def _w18_run(**overrides: object) -> dict[str, object]:
    run: dict[str, object] = {
        "executions": 2000,
        "steps": 10,
        "workers": 8,
        "rounds": [{"traced": False, "nodes_per_s": 3000.0}, {"traced": True, "nodes_per_s": 2850.0}] * 2,
        "nodes_per_s_off": 3000.0,
        "nodes_per_s_on": 2850.0,
        "ratio": 0.95,
        "pair_ratio_min": 0.91,
        "pair_ratio_max": 0.99,
    }
    return run | overrides


def test_the_w18_row_holds_at_the_target_and_shows_the_pairs_spread() -> None:
    row = report._w18_row(_w18_run())
    assert (row.flowdeck, row.ratio, row.target, row.holds) == (
        "3,000 → 2,850",
        "0.95×",
        "on ≥ 0.9× off",
        True,
    )
    assert "2 pairs, alternated; pairs 0.91–0.99×" in row.measure
    assert report._w18_row(_w18_run(ratio=0.89)).holds is False


def test_the_w18_row_says_what_went_wrong() -> None:
    row = report._w18_row({"error": "RuntimeError: a traced worker ended 3 spans of 24 expected"})
    assert (row.flowdeck, row.holds) == (
        "error: RuntimeError: a traced worker ended 3 spans of 24 expected",
        None,
    )
    assert report._w18_row(None).flowdeck == "not run"


@pytest.mark.slow
@pytest.mark.postgres
def test_w18_runs_end_to_end_and_its_traced_rounds_trace_every_attempt_and_node(tmp_path: Path) -> None:
    require_postgres()
    doc, _ = tiny_runs.run_tiny("W18", tmp_path)
    w18 = doc["runs"]["W18/flowdeck"]
    assert "error" not in w18, w18
    assert [r["traced"] for r in w18["rounds"]] == [False, True]  # off, then on: alternated
    # 6 executions × 3 steps: an attempt span per execution and a node span per step, nothing in the off arm
    assert [r.get("spans") for r in w18["rounds"]] == [None, 6 * (3 + 1)]
    assert w18["ratio"] == pytest.approx(w18["nodes_per_s_on"] / w18["nodes_per_s_off"])
    assert [row["workload"] for row in doc["rows"]].count("W18") == 1
