"""The benchmark runs end to end (`python -m bench --quick --tiny`) and reports every workload.

A smoke test only: tiny sizes, and no assertion on any measured number (timed assertions do not belong in
the test suite; the numbers live in bench/RESULTS.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import pg, report

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RUN_BY_THEIR_OWN_TESTS = {"W12", "W14", "W15", "W17", "W18", "W19"}
"""Workloads whose test file runs them end to end (`tiny_runs.run_tiny`) with assertions of their own: the
smoke run leaves them out rather than run them twice, and the suite's processes run them side by side."""


def require_postgres() -> None:
    if pg.reachable():
        return
    message = f"PostgreSQL is not reachable at {pg.HOST}:{pg.PORT}"
    if os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{message} and FLOWDECK_REQUIRE_POSTGRES=1")
    pytest.skip(message)


def test_bench_runs_every_workload_in_quick_mode_on_tiny_sizes(tmp_path: Path) -> None:
    try:
        import dbos  # noqa: F401
    except ImportError:
        message = "the bench extra is not installed (pip install -e '.[bench]')"
        if os.environ.get("CI") == "true":  # CI installs it (.ci/run): its absence is a failure there
            pytest.fail(message)
        pytest.skip(message)
    require_postgres()
    out_json = tmp_path / "results.json"
    env = dict(os.environ, FLOWDECK_BENCH_DB_SUFFIX="_smoke")
    only = ",".join(_smoked())
    run = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--tiny", "--only", only, "--json", str(out_json)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-4000:]

    doc = json.loads(out_json.read_text())
    assert {row["workload"] for row in doc["rows"]} == set(report.WORKLOADS)
    errors = {name: r["error"] for name, r in {**doc["runs"], **doc["limits"]}.items() if "error" in r}
    assert errors == {}
    not_run = {row["workload"] for row in doc["rows"] if row["flowdeck"] == "not run"}
    assert not_run == RUN_BY_THEIR_OWN_TESTS
    table_workloads = {
        line.split("|")[1].strip() for line in run.stdout.splitlines() if line.startswith("| W")
    }
    assert set(report.WORKLOADS) <= table_workloads
    # issue 16's figures: CPU per node for both systems, and L3 in the limits table and against W1
    assert {"pgbench", "psycopg_loop", "L3"} <= set(doc["limits"])
    cpu_row = next(row for row in doc["rows"] if "CPU per node" in row["measure"])
    assert "database" in cpu_row["flowdeck"]
    assert "database" in cpu_row["dbos"]
    assert any(row["measure"].startswith("W1 ÷ L3") for row in doc["rows"])
    assert any(line.startswith("| L3 ") for line in run.stdout.splitlines())
    assert doc["meta"]["mode"] == "tiny"


def _smoked() -> list[str]:
    return [w for w in report.WORKLOADS if w not in RUN_BY_THEIR_OWN_TESTS]


@pytest.mark.parametrize("workload", sorted(RUN_BY_THEIR_OWN_TESTS))
def test_a_workload_left_out_of_the_smoke_run_is_run_by_its_own_test(workload: str) -> None:
    own = (ROOT / "tests" / "bench" / f"test_{workload.lower()}.py").read_text()
    assert f'run_tiny("{workload}"' in own
