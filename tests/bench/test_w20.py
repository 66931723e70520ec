"""W20 (the claim and W1 across N shards, issue 32 point 5): the router every start goes through, the
refusal of a shard count that would split the work unevenly, and the module end to end at a tiny size
(it must not rot while it stays out of `python -m bench`'s plan).

No assertion on any timing: the figures live in docs/sharding.md."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from bench import pg, protocol, shards
from tests.bench.test_bench_smoke import require_postgres
from tests.bench.tiny_runs import ROOT


def test_an_execution_id_always_hashes_to_the_same_shard_and_ids_spread_evenly() -> None:
    ids = [f"chain10-{i:06d}" for i in range(4000)]
    first = [shards.shard_of(i, 4) for i in ids]
    assert first == [shards.shard_of(i, 4) for i in ids]  # the same in every call (no salted hash)
    # pinned: a start in any process, of any release, must find an id where an earlier start put it
    assert first[:6] == [3, 1, 0, 2, 3, 1]
    assert shards.shard_of("sched:nightly:2026-12-04T02:00:00Z", 1) == 0
    spread = Counter(first)
    assert sorted(spread) == [0, 1, 2, 3]
    assert all(800 <= n <= 1200 for n in spread.values()), spread


def _shards(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m bench.shards ARGS`, for a refusal that comes before any database work."""
    return subprocess.run(
        [sys.executable, "-m", "bench.shards", *args],
        cwd=ROOT,
        env=protocol.child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_shard_count_that_would_split_the_processes_unevenly_is_refused_before_any_database_work() -> None:
    run = _shards("--shards", "1", "3", "--procs", "4")
    assert run.returncode == 2
    assert "--shards 3: each N must be at least 1 and divide --procs (4)" in run.stderr


def test_a_chain_no_worker_serves_is_refused_rather_than_waited_for() -> None:
    run = _shards("--steps", "2")
    assert run.returncode == 2
    assert "--steps must be one of 3, 10" in run.stderr


@pytest.mark.slow
@pytest.mark.postgres
def test_w20_runs_every_n_at_a_tiny_size_and_drops_its_shard_databases() -> None:
    require_postgres()
    tiny = ["--shards", "1", "2", "--executions", "8", "--steps", "3", "--workers", "2", "--procs", "2"]
    tiny += ["--claimers", "2", "--rounds", "1", "--poll-timeout", "1", "--timeout", "120"]
    run = subprocess.run(
        [sys.executable, "-m", "bench.shards", *tiny],
        cwd=ROOT,
        env=dict(protocol.child_env(), FLOWDECK_BENCH_DB_SUFFIX="_test"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    [line] = [line for line in run.stdout.splitlines() if line.startswith(protocol.MARK)]
    result = json.loads(line[len(protocol.MARK) :])
    assert [r["shards"] for r in result["rounds"]] == [1, 2]
    for r in result["rounds"]:
        assert len(r["executions_per_shard"]) == r["shards"]
        assert sum(r["executions_per_shard"]) == 8  # the same total work at every N
        assert r["claimed"] == 8  # the claim arm took every row, none twice
        assert r["commits_per_node"] > 0
    assert set(result["by_shards"]) == {"1", "2"}
    assert result["by_shards"]["1"]["nodes_ratio"] == 1.0
    assert "nodes/s (min-max)" in run.stderr  # the table an operator reads
    assert not any(pg.exists(f"flowdeck_bench_shard_{i}_test") for i in range(2))
