"""W17 (tasks/s through Flowdeck's `django.tasks` backend against django-tasks-db's): the harness end to end
at a tiny size, both systems' runs in one child, every task ended on each, and the row in the table.

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench import report
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres


def _w17_run(flowdeck: float, peer: float) -> dict[str, object]:
    side = {"tasks": 1000, "procs": 2, "run_s": 1.0, "enqueue_s": 10.0, "enqueued_per_s": 100.0}
    return {
        "flowdeck": side | {"tasks_per_s": flowdeck},
        "db": side | {"tasks_per_s": peer},
        "ratio": flowdeck / peer,
    }


def test_the_w17_row_holds_at_three_times_the_peer_and_not_below() -> None:
    held = report._w17_row(_w17_run(330.0, 110.0))
    assert (held.flowdeck, held.dbos, held.ratio, held.holds) == ("330", "110", "3.00×", True)
    assert "1,000 tasks on 2 worker processes" in held.measure
    assert report._w17_row(_w17_run(320.0, 110.0)).holds is False
    missing = report._w17_row(None)
    assert (missing.flowdeck, missing.holds) == ("not run", None)


@pytest.mark.slow
@pytest.mark.postgres
def test_w17_runs_both_backends_at_a_tiny_size(tmp_path: Path) -> None:
    if importlib.util.find_spec("django_tasks_db") is None:
        tiny_runs.missing_bench_extra()
    require_postgres()
    doc, _ = tiny_runs.run_tiny("W17", tmp_path)
    w17 = doc["runs"]["W17/flowdeck"]
    assert "error" not in w17, w17
    for side in ("flowdeck", "db"):  # every task of each side ended successfully, or the child raised
        assert (w17[side]["tasks"], len(w17[side]["rounds"])) == (10, 1)
    [row] = [row for row in doc["rows"] if row["workload"] == "W17"]
    assert row["holds"] is not None  # measured: a ratio either way (the figure itself is not asserted)
