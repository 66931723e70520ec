"""W12 (websocket clients on the list while W1 runs): the harness end to end at a tiny size, its rows in
the table, the clients' accounting of missed and duplicated events, and the deadline that keeps a hung
child from hanging the bench.

No assertion on any timing: the numbers live in bench/RESULTS.md."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from bench import live_clients, protocol, report, stats
from tests.bench import tiny_runs
from tests.bench.test_bench_smoke import require_postgres


def _w12_run(**overrides: object) -> dict[str, object]:
    delivery = {"ms": {"p50": 40.0, "p95": 90.0, "n": 300}, "max_ms": 120.0, "missed": 0, "drain_s": 0.01}
    run: dict[str, object] = {
        "executions": 500,
        "steps": 10,
        "workers": 8,
        "clients": 100,
        "rounds": [
            {"clients": 0, "nodes_per_s": 2000.0},
            {"clients": 100, "nodes_per_s": 1900.0, "delivery": delivery},
        ],
        "nodes_per_s_without": 2000.0,
        "nodes_per_s_with": 1900.0,
        "ratio": 0.95,
        "ms": {"p50": 40.0, "p95": 90.0, "n": 1_200_000},
        "max_ms": 120.0,
        "committed": 12_000,
        "missed": 0,
        "all_received": True,
    }
    return run | overrides


def test_w12_rows_hold_when_p95_ratio_and_delivery_all_hold() -> None:
    latency, throughput = report._w12_rows(_w12_run())
    assert (latency.flowdeck, latency.target, latency.holds) == (
        "40 / 90 (max 120); 1,200,000 of 1,200,000 heard",
        "p95 ≤ 250 ms, none missed",
        True,
    )
    assert (throughput.flowdeck, throughput.ratio, throughput.holds) == ("2,000 → 1,900", "0.95×", True)
    assert "1 rounds each, alternated" in throughput.measure


def test_w12_rows_fail_on_a_missed_event_a_slow_p95_or_a_slow_arm() -> None:
    assert report._w12_rows(_w12_run(missed=1, all_received=False))[0].holds is False
    assert report._w12_rows(_w12_run(ms={"p50": 40.0, "p95": 251.0, "n": 9}))[0].holds is False
    assert report._w12_rows(_w12_run(ratio=0.89))[1].holds is False


def test_w12_rows_say_what_went_wrong() -> None:
    rows = report._w12_rows({"error": "TimeoutError: W12 clients: nothing after 120 s, killed"})
    assert [(r.flowdeck, r.holds) for r in rows] == [
        ("error: TimeoutError: W12 clients: nothing after 120 s, killed", None)
    ] * 2
    assert report._w12_rows(None)[0].flowdeck == "not run"


def test_clients_summary_counts_misses_duplicates_and_latency() -> None:
    commits = {1: 1000.0, 2: 1000.0, 3: 1010.0}
    whole, partial = live_clients.Client(), live_clients.Client()
    for event_id, at in ((1, 1005.0), (2, 1020.0), (3, 1030.0)):
        whole.note(event_id, event_id, at)
    for event_id, at in ((1, 1001.5), (1, 1001.5)):  # event 1 twice, 2 and 3 never
        partial.note(event_id, event_id, at)
    found = live_clients.summary([whole, partial], commits)
    assert (found["received_min"], found["received_max"]) == (1, 3)
    assert (found["missed"], found["duplicates"], found["clients_missing_events"]) == (2, 1, 1)
    assert found["latency_histogram_ms"] == {"2": 2, "5": 1, "20": 2}
    assert found["max_ms"] == 20.0


def test_percentiles_of_a_histogram_are_nearest_rank() -> None:
    assert stats.from_histogram(Counter({1: 50, 7: 45, 300: 5})) == {"p50": 1.0, "p95": 7.0, "n": 100}
    assert stats.from_histogram(Counter({1: 50, 7: 44, 300: 6}))["p95"] == 300.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def test_a_child_past_its_deadline_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    began = time.monotonic()
    with pytest.raises(TimeoutError, match="ran over 3 s: killed with its children"):
        protocol.run_child("tests.bench.hang_child", [str(pid_file)], timeout=3)
    assert time.monotonic() - began < 30
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


@pytest.mark.slow
@pytest.mark.postgres
def test_w12_runs_end_to_end_and_every_client_hears_every_event(tmp_path: Path) -> None:
    try:
        import websockets  # noqa: F401
    except ImportError:
        tiny_runs.missing_bench_extra()
    require_postgres()
    doc, printed = tiny_runs.run_tiny("W12", tmp_path)
    w12 = doc["runs"]["W12/flowdeck"]
    assert "error" not in w12, w12
    assert [r["clients"] for r in w12["rounds"]] == [0, 3]  # without, then with: alternated
    # each party's CPU while W1 ran: the console and its clients only in the round that has them
    assert [set(r["cpu_cores"]) for r in w12["rounds"]] == [
        {"workers", "database"},
        {"workers", "web", "clients", "database"},
    ]
    assert all(used >= 0 for r in w12["rounds"] for used in r["cpu_cores"].values())
    assert w12["rounds"][0]["cpu_cores"]["workers"] > 0  # the workers ran W1
    delivery = w12["rounds"][1]["delivery"]
    # 6 executions × 3 steps: every node's StepStarted and StepCompleted, and each execution's own events
    assert delivery["committed"] >= 6 * 3 * 2
    assert (delivery["received_min"], delivery["received_max"]) == (delivery["committed"],) * 2
    assert (delivery["missed"], delivery["duplicates"], delivery["connections_lost"]) == (0, 0, [])
    assert w12["all_received"] is True
    assert w12["ms"]["n"] == 3 * delivery["committed"]
    assert [row["workload"] for row in doc["rows"]].count("W12") == 2
    assert w12["ratio"] == pytest.approx(w12["nodes_per_s_with"] / w12["nodes_per_s_without"])
    assert "| W12 round |" in printed
