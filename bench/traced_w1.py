"""W18: W1 with OpenTelemetry tracing on against W1 with it off, alternated in pairs (issue 30, 3(b)).

`python -m bench.traced_w1 w18 --executions 2000 --steps 10 --workers 8 --rounds 10`

Each round is W1 in one worker process (`bench.workloads.run_w1_workers`: the executions created first,
the clock from "go" to the last completion), on the `flowdeck_bench_w18` database, emptied per round.
Rounds alternate off, on, off, on, …: a machine that slows down for a while slows both arms, and the ratio
is reported per pair as well as over the whole run.

Tracing on is what a project does to turn it on: the OpenTelemetry SDK's `TracerProvider` set as the
process's global provider, with a `BatchSpanProcessor` (what a deployment uses, its exporter in a thread of
its own) exporting to an in-memory exporter (`bench.traced`, set by `bench.worker` when the workers'
environment says so). The coordinator's starts are traced too, so each execution carries its start's
context and every attempt span is a child of it (the extract is part of the measured work). Each traced
worker's exporter counts the spans it took (a file it rewrites per batch, up to the batch processor's
5 s delay after the last span); once the round is measured the coordinator waits for every one it
expects (an attempt and its nodes per execution) before the workers stop: a traced round
that traced less is an error, not a fast round.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from typing import Any

from bench import flowdeck_env, pg, protocol, traced, workloads
from bench.worker import add_engine_arguments

DATABASE = pg.FLOWDECK_DB + "_w18"


def _spans_ended(path: Path, expected: int, seconds: float = 30.0) -> int:
    """Wait (polling the worker's file) until it counted `expected` exported spans; answers the count."""
    deadline = time.monotonic() + seconds
    while True:
        counted = int(path.read_text() or 0) if path.exists() else 0
        if counted >= expected:
            return counted
        if time.monotonic() > deadline:
            raise RuntimeError(f"a traced worker exported {counted} spans of {expected} expected")
        time.sleep(0.02)


def _provider(ratio: float) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider(sampler=traced.sampler(ratio))
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    return provider


def _round(ns: argparse.Namespace, tracing_on: bool, work: Path, number: int) -> dict[str, Any]:
    pg.empty_tables(DATABASE, "public", "flowstore_%", keep=flowdeck_env.KEEP)
    workflow_id = f"chain{ns.steps}"
    provider = _provider(ns.sample) if tracing_on else None
    asyncio.run(workloads.start_chains(workflow_id, ns.steps, ns.executions, provider))
    spans = work / f"spans-{number}"
    nodes = ns.executions * ns.steps
    # a node span per step, an attempt span per execution: all of them, or some when sampling
    expected = nodes + ns.executions if ns.sample >= 1 else 1
    counted: list[int] = []
    env = {traced.TRACING: "1", traced.SPANS: str(spans), traced.RATIO: str(ns.sample)} if tracing_on else {}
    settled = (lambda: counted.append(_spans_ended(spans, expected))) if tracing_on else None
    began, ended, _, cpu_seconds, database_cpu = workloads.run_w1_workers(ns, workflow_id, env, settled)
    found: dict[str, Any] = {
        "traced": tracing_on,
        "seconds": ended - began,
        "nodes_per_s": nodes / (ended - began),
        "cpu_us_per_node": cpu_seconds / nodes * 1e6,
        "database_cpu_us_per_node": database_cpu / nodes * 1e6,
    }
    if tracing_on:
        found["spans"] = counted[0]
    return found


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Both arms' mean nodes/s, their ratio, and each pair's ratio (their spread)."""
    off = [r["nodes_per_s"] for r in rounds if not r["traced"]]
    on = [r["nodes_per_s"] for r in rounds if r["traced"]]
    pairs = [b / a for a, b in zip(off, on, strict=False)]
    return {
        "nodes_per_s_off": mean(off),
        "nodes_per_s_on": mean(on),
        "ratio": mean(on) / mean(off),
        "pair_ratios": [round(p, 3) for p in pairs],
        "pair_ratio_min": min(pairs),
        "pair_ratio_max": max(pairs),
        "cpu_us_per_node_off": mean(r["cpu_us_per_node"] for r in rounds if not r["traced"]),
        "cpu_us_per_node_on": mean(r["cpu_us_per_node"] for r in rounds if r["traced"]),
    }


def cmd_w18(ns: argparse.Namespace) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", DATABASE)  # the coordinator creates the executions
    work = Path(tempfile.mkdtemp(prefix="flowdeck-w18-"))
    rounds = []
    try:
        for n in range(ns.rounds * 2):
            rounds.append(_round(ns, n % 2 == 1, work, n))
            brief = rounds[-1]
            arm = f"on, {brief['spans']} spans" if brief["traced"] else "off"
            print(f"W18 round {n + 1} ({arm}): {brief['nodes_per_s']:,.0f} nodes/s", file=sys.stderr)
    finally:
        from django.db import connections

        connections.close_all()
        pg.clear(DATABASE)  # emptied, not dropped: see pg.recreate
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "executions": ns.executions,
        "steps": ns.steps,
        "workers": ns.workers,
        "processes": 1,
        "processor": "BatchSpanProcessor → InMemorySpanExporter",
        "sample": ns.sample,
        "rounds": rounds,
    } | _summary(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.traced_w1")
    parser.add_argument("command", choices=["w18"])
    add_engine_arguments(parser)
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="pairs of rounds: off, then on")
    parser.add_argument("--timeout", type=float, default=300.0, help="for each W1 run")
    parser.add_argument("--sample", type=float, default=1.0, help="share of traces kept (the SDK's sampler)")
    ns = parser.parse_args(argv)
    ns.database, ns.procs, ns.profile = DATABASE, 1, None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through `finally`, stopping every child
    protocol.emit(cmd_w18(ns))
    sys.stdout.flush()
    os._exit(0)  # the store's threads need no orderly end in a measuring child


if __name__ == "__main__":
    main()
