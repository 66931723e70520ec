"""W19 (W1 through PgBouncer in transaction mode against W1 direct, issue 32 point 1): its row in the table,
and the harness end to end at a tiny size (the rounds alternate, and the pooled round's work went through
the pooler).

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres
from tests.store.pooler_support import require_pgbouncer


def _w19_run(**overrides: object) -> dict[str, object]:
    run: dict[str, object] = {
        "executions": 2000,
        "steps": 10,
        "workers": 8,
        "rounds": [{"pooled": False, "nodes_per_s": 3000.0}, {"pooled": True, "nodes_per_s": 2850.0}] * 2,
        "nodes_per_s_direct": 3000.0,
        "nodes_per_s_pooled": 2850.0,
        "ratio": 0.95,
        "pair_ratio_min": 0.91,
        "pair_ratio_max": 0.99,
    }
    return run | overrides


def test_the_w19_row_holds_at_the_target_and_shows_the_pairs_spread() -> None:
    row = report._w19_row(_w19_run())
    assert (row.flowdeck, row.ratio, row.target, row.holds) == (
        "3,000 → 2,850",
        "0.95×",
        "pooled ≥ 0.9× direct",
        True,
    )
    assert "direct → via PgBouncer, transaction mode (2 pairs, alternated; pairs 0.91–0.99×)" in row.measure
    assert report._w19_row(_w19_run(ratio=0.89)).holds is False


def test_the_w19_row_says_what_went_wrong() -> None:
    row = report._w19_row({"error": "PgBouncerMissing: No `pgbouncer` binary on this machine"})
    assert (row.flowdeck, row.holds) == (
        "error: PgBouncerMissing: No `pgbouncer` binary on this machine",
        None,
    )
    assert report._w19_row(None).flowdeck == "not run"


@pytest.mark.slow
@pytest.mark.postgres
def test_w19_runs_end_to_end_and_its_pooled_rounds_go_through_the_pooler(tmp_path: Path) -> None:
    require_postgres()
    require_pgbouncer()
    doc, _ = tiny_runs.run_tiny("W19", tmp_path)
    w19 = doc["runs"]["W19/flowdeck"]
    assert "error" not in w19, w19
    assert [r["pooled"] for r in w19["rounds"]] == [False, True]  # direct, then pooled: alternated
    assert w19["pooled_transactions"] > 0  # the pooled worker's writes went through PgBouncer
    assert w19["pooler"].startswith("PgBouncer ")
    assert w19["ratio"] == pytest.approx(w19["nodes_per_s_pooled"] / w19["nodes_per_s_direct"])
    assert [row["workload"] for row in doc["rows"]].count("W19") == 1
