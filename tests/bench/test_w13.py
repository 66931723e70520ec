"""W13's harness (`python -m bench.workloads w13`) runs at a tiny size and purges exactly the ended
executions of W7's mix, with their ledger, while the worst W7 arm is searched: by the batched row delete and
by whole day partitions alike. No timed assertion: the numbers are the lead's to run at size (1,000,000
ended executions) and live in bench/RESULTS.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.test_bench_smoke import require_postgres

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_w13_purges_exactly_the_ended_executions_of_the_mix() -> None:
    require_postgres()
    env = dict(os.environ, FLOWDECK_BENCH_DB_SUFFIX="_smoke")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.workloads",
            "w13",
            "--rows",
            "400",
            "--reps",
            "2",
            "--purge-batch",
            "50",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    [line] = [line for line in run.stdout.splitlines() if line.startswith("BENCH_RESULT ")]
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    assert (result["purged"], result["expected"], result["exact"]) == (300, 300, True)
    assert result["tables_after"] == {"execution": 100, "event": 400, "field": 200, "wait": 72}
    assert result["ledger_rows_purged"] == 300 * 4 + 300 * 2
    assert result["searches_during"] >= 1
    # the same purge by whole days (migration 0018): exactly the same rows went, and the ended
    # executions' day partitions with them
    by_days = result["partitions"]
    assert (by_days["purged"], by_days["exact"], result["exact_all"]) == (300, True, True)
    assert by_days["tables_after"] == result["tables_after"]
    assert by_days["partitions_left"] < result["partitions_left"]
