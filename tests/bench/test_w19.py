"""W19 (W1 through PgBouncer against W1 direct, issue 32 point 1): its rows in the table (one per pooled
arm), and the harness end to end at a tiny size (the arms take turns, and the pooled rounds' work went
through the pooler).

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres
from tests.store.pooler_support import require_pgbouncer


def _w19_run(**overrides: object) -> dict[str, object]:
    arms = ("direct", "pooled", "session_writes", "direct_writes")
    run: dict[str, object] = {
        "executions": 2000,
        "steps": 10,
        "workers": 8,
        "rounds": [{"arm": arm, "nodes_per_s": 3000.0} for arm in arms] * 2,
        "nodes_per_s_direct": 3000.0,
        "nodes_per_s_pooled": 1650.0,
        "nodes_per_s_session_writes": 2850.0,
        "ratio_pooled": 0.55,
        "turn_ratio_min_pooled": 0.5,
        "turn_ratio_max_pooled": 0.6,
        "ratio_session_writes": 0.95,
        "turn_ratio_min_session_writes": 0.91,
        "turn_ratio_max_session_writes": 0.99,
        "nodes_per_s_direct_writes": 2970.0,
        "ratio_direct_writes": 0.99,
        "turn_ratio_min_direct_writes": 0.95,
        "turn_ratio_max_direct_writes": 1.03,
    }
    return run | overrides


def test_the_w19_rows_judge_each_pooled_arm_against_direct_and_show_the_turns_spread() -> None:
    pooled, session_writes, direct_writes = report._w19_rows(_w19_run())
    assert (pooled.flowdeck, pooled.ratio, pooled.target, pooled.holds) == (
        "3,000 → 1,650",
        "0.55×",
        "pooled ≥ 0.9× direct",
        False,
    )
    assert "transaction mode but LISTEN (no prepared statements) (2 turns, alternated; turns 0.50–0.60×)" in (
        pooled.measure
    )
    assert (session_writes.flowdeck, session_writes.ratio, session_writes.holds) == (
        "3,000 → 2,850",
        "0.95×",
        True,
    )
    assert "the 2 group-commit writers (session mode, prepared)" in session_writes.measure
    assert (direct_writes.ratio, direct_writes.holds) == ("0.99×", True)
    assert "the 2 writers, which go straight to PostgreSQL (2 turns" in direct_writes.measure


def test_the_w19_row_says_what_went_wrong() -> None:
    [row] = report._w19_rows({"error": "PgBouncerMissing: No `pgbouncer` binary on this machine"})
    assert (row.flowdeck, row.holds) == (
        "error: PgBouncerMissing: No `pgbouncer` binary on this machine",
        None,
    )
    assert report._w19_rows(None)[0].flowdeck == "not run"


@pytest.mark.slow
@pytest.mark.postgres
def test_w19_runs_end_to_end_and_its_pooled_rounds_go_through_the_pooler(tmp_path: Path) -> None:
    require_postgres()
    require_pgbouncer()
    doc, _ = tiny_runs.run_tiny("W19", tmp_path)
    w19 = doc["runs"]["W19/flowdeck"]
    assert "error" not in w19, w19
    assert [r["arm"] for r in w19["rounds"]] == ["direct", "pooled", "session_writes", "direct_writes"]
    assert (
        w19["pooled_transactions"] > 0
    )  # the pooled workers' work went through PgBouncer's transaction pool
    assert w19["pooler"].startswith("PgBouncer ")
    for arm in ("pooled", "session_writes", "direct_writes"):
        assert w19[f"ratio_{arm}"] == pytest.approx(w19[f"nodes_per_s_{arm}"] / w19["nodes_per_s_direct"])
    assert [row["workload"] for row in doc["rows"]].count("W19") == 3
