"""L3: the engine's own statements for W1, issued by a bare asyncio loop with no engine around it.

The honest ceiling of this design (issue 16): whatever the interpreter, the walker, the recorder and the
store's Python cost per node, W1 cannot beat the statements it must send. This loop sends exactly those,
with the same SQL text, the same parameters, the same claim (`CLAIM_WITH_LEDGER`, as many rows as there
are free slots) and the same group commit (`store.django.group_commit.GroupCommit`, two connections) as
a worker of `workers × batch_size` attempt slots, and nothing else: no flow, no replay, no values, no
store objects. Per execution of `steps` steps, as the statement census of W1 shows (bench/PROFILE.md):

- the claim's share (one statement claims up to the free slots);
- the first write: ExecutionClaimed, ExecutionResumed and the first StepStarted;
- `steps - 1` writes of a StepCompleted and the next StepStarted;
- the finish: the last StepCompleted, ExecutionReleased and Completed, with the status columns.

Its CPU per node is this process's user + system seconds over the timed window, divided by the nodes. It
runs on the event loop `flowdeck_workers` runs on (`flowdeck.engine.event_loop`: uvloop where installed).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import cpu as bench_cpu

__all__ = ["Ceiling", "run"]


@dataclass(frozen=True)
class Ceiling:
    nodes: int
    seconds: float
    cpu_seconds: float
    database_cpu_seconds: float
    transactions: int
    writes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "seconds": self.seconds,
            "per_second": self.nodes / self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "cpu_us_per_node": self.cpu_seconds / self.nodes * 1e6,
            "database_cpu_us_per_node": self.database_cpu_seconds / self.nodes * 1e6,
            "transactions": self.transactions,
            "writes": self.writes,
        }


class _Statements:
    """The SQL texts and fixed parameters of W1's statements, built once."""

    def __init__(self, flow_id: str, hash_: str, executor: str) -> None:
        from flowdeck.store import spi
        from flowdeck.store.django import queries, rows, verb_queries
        from flowdeck.store.events import encode_data

        self.encode = encode_data
        self.names = verb_queries.event_param_names
        self.flow_id = flow_id
        self.executor = executor
        self.claim_params: dict[str, Any] = {"executor": executor}
        served = queries.served_predicate([(flow_id, hash_)], self.claim_params)
        # the engine's first claims are in priority order (store.claim_order): with no priorities, created
        self.claim = queries.CLAIM_WITH_LEDGER.text("postgresql").format(
            served=served, order=queries.CLAIM_ORDER[False]
        )
        self.first = verb_queries.claimed_write(events=3)
        self.step = verb_queries.claimed_write(events=2)
        self.finish = verb_queries.claimed_write(
            events=3, set_status=True, release=True, delete_waits="all", unless_cancelled=True
        )
        self.completed = rows.status_columns(spi.Completed())
        self.origin = "l3"

    def write(self, execution_id: str, token: Any, *events: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        now = datetime.now(UTC)
        params: dict[str, Any] = {"id": execution_id, "token": token, "now": now, "origin": self.origin}
        for i, (kind, data) in enumerate(events):
            flow_key, kind_key, time_key, data_key = self.names(i)
            params[flow_key] = self.flow_id
            params[kind_key] = kind
            params[time_key] = datetime.now(UTC)
            params[data_key] = self.encode(data)
        return params


async def _execution(writer: Any, sql: _Statements, row: Any, steps: int) -> None:
    eid, token = row[0], row[6]
    who = {"executor_id": sql.executor}
    first = sql.write(
        eid,
        token,
        ("ExecutionClaimed", who),
        ("ExecutionResumed", who),
        ("StepStarted", {**who, "step_name": "s0"}),
    )
    await writer.run("append_event", sql.first, first)
    for i in range(steps - 1):
        done = ("StepCompleted", {"step_name": f"s{i}"})
        params = sql.write(eid, token, done, ("StepStarted", {**who, "step_name": f"s{i + 1}"}))
        await writer.run("append_event", sql.step, params)
    last = ("StepCompleted", {"step_name": f"s{steps - 1}"})
    params = sql.write(eid, token, last, ("ExecutionReleased", who), ("Completed", {}))
    params.update(sql.completed)
    await writer.run("finish", sql.finish, params)


async def _loop(
    connect: dict[str, Any], sql: _Statements, executions: int, steps: int, slots: int
) -> Ceiling:
    from flowdeck.store.django.group_commit import GroupCommit

    writer = GroupCommit(connect, connections=2)
    room = asyncio.Event()
    running: set[asyncio.Task[None]] = set()
    finished = 0

    def ended(task: asyncio.Task[None]) -> None:
        nonlocal finished
        running.discard(task)
        finished += 1
        room.set()

    began, meter = time.perf_counter(), bench_cpu.Meter({"loop": [os.getpid()]})
    claimed = 0
    while finished < executions:
        free = min(slots - len(running), executions - claimed)
        if free <= 0:
            room.clear()
            await room.wait()
            continue
        now = datetime.now(UTC)
        params = {**sql.claim_params, "now": now, "limit": free, "expiry": now + timedelta(seconds=30)}
        found = await writer.run("claim_ready", sql.claim, params, all_rows=True, prepare=False)
        if not found:
            if not running:
                raise RuntimeError(f"L3: nothing left to claim after {finished} of {executions} executions")
            room.clear()
            await room.wait()
            continue
        claimed += len(found)
        for row in found:
            task = asyncio.ensure_future(_execution(writer, sql, row, steps))
            running.add(task)
            task.add_done_callback(ended)
    seconds, spent = time.perf_counter() - began, meter.spent()
    cpu_seconds, database_cpu = spent["loop"], spent["database"]
    transactions, writes = writer.transactions, writer.writes
    await writer.aclose()
    return Ceiling(executions * steps, seconds, cpu_seconds, database_cpu, transactions, writes)


def run(
    connect: dict[str, Any], flow_id: str, hash_: str, executions: int, steps: int, slots: int
) -> Ceiling:
    """Run every execution of the `steps`-long chain `flow_id` (created, none claimed) to Completed."""
    from flowdeck.engine import event_loop

    sql = _Statements(flow_id, hash_, executor="l3-bare-loop")
    # the loop the workers run on (uvloop where installed), so the ceiling is not lower than W1's own
    return event_loop.run(_loop(connect, sql, executions, steps, slots))
