"""Subflows expanded and painted, and a saga's compensated nodes, in every format, read back by the real
tools (tests/diagrams/painted.py) from real executions on the MemoryStore."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowdeck.engine import Flow, FlowDomainError
from flowdeck.engine.progress import NodeStatus, Progress
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.memory import MemoryStore
from tests.diagrams import painted
from tests.diagrams.painted import FORMATS
from tests.engine.engine_support import make_engine, until, waiting_for

C, R, P, S, F = (
    NodeStatus.COMPLETED,
    NodeStatus.RUNNING,
    NodeStatus.PENDING,
    NodeStatus.SLEEPING,
    NodeStatus.FAILED,
)
COMPENSATED = NodeStatus.COMPENSATED


def _none(ctx: object) -> None:
    return None


# -------------------------------------------------------------------------------------------- subflow

payment = (
    Flow.init("payment")
    .input("amount", int)
    .sleep("settle", timedelta(hours=1))
    .output("charge", lambda ctx: f"ch-{ctx.amount}", type=str)
)
paying = (
    Flow.init("paying")
    .output("total", lambda ctx: 1200, type=int)
    .subflow("pay", payment, lambda ctx: {"amount": ctx.total})
    .step("ship", _none)
)


async def _paying() -> tuple[Progress, Progress]:
    """The execution sleeping inside its subflow, then once woken and ended."""
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [paying]) as engine:
        eid = await engine.workflows.start("paying", execution_id="e1")
        await until(store, eid, waiting_for("pay~settle"))
        waiting = (await engine.executions.describe(eid)).progress
        await clock.advance(3600)
        state = await until(store, eid)
        assert state.status == spi.Completed()
        done = (await engine.executions.describe(eid)).progress
    assert waiting is not None
    assert done is not None
    return waiting, done


@pytest.mark.parametrize("format", FORMATS)
async def test_a_subflow_is_expanded_and_painted_from_its_children(format: str) -> None:
    waiting, done = await _paying()
    ids = painted.places(paying)
    got = painted.check(
        format,
        paying,
        waiting,
        {
            "total": (C, "total", "completed"),
            "pay": (R, "pay", "running"),  # the subflow's state is its children's
            "pay~amount": (C, "amount", "completed"),
            "pay~settle": (S, "settle"),
            "pay~charge": (P, "charge", "pending"),
            "ship": (P, "ship", "pending"),
        },
    )
    assert any(line.startswith("sleeping until ") for line in got[ids["pay~settle"]].lines)
    # Expanded: the children are drawn inside the subflow (DOT's reader checks its cluster is painted too).
    for child in ("pay~amount", "pay~settle", "pay~charge"):
        assert got[ids[child]].within == ids["pay"], (format, child, got[ids[child]])
    assert (got[ids["total"]].within, got[ids["ship"]].within) == ("", "")
    painted.check(
        format,
        paying,
        done,
        {
            "pay": (C, "pay", "completed"),
            "pay~settle": (C, "settle", "completed"),
            "pay~charge": (C, "charge", "completed"),
            "ship": (C, "ship", "completed"),
        },
    )


# --------------------------------------------------------------------------------------- compensation


class Declined(FlowDomainError):
    """The card was declined."""


def _decline(ctx: object) -> None:
    raise Declined("card declined")


undone: list[str] = []

saga = (
    Flow.init("saga")
    .output("hold", lambda ctx: "h-1", type=str, compensate=lambda ctx: undone.append("hold"))
    .step("reserve", _none, compensate=lambda ctx: undone.append("reserve"))
    .step("charge", _decline)
    .step("ship", _none)
)


@pytest.mark.parametrize("format", FORMATS)
async def test_a_failed_saga_paints_what_it_undid_apart_from_the_failure(format: str) -> None:
    undone.clear()
    clock = ManualClock()
    store = MemoryStore(clock)
    async with make_engine(store, clock, [saga]) as engine:
        eid = await engine.workflows.start("saga", execution_id="e1")
        state = await until(store, eid)
        progress = (await engine.executions.describe(eid)).progress
    assert isinstance(state.status, spi.Failed)
    assert undone == ["reserve", "hold"]  # undone, latest first
    assert progress is not None
    got = painted.check(
        format,
        saga,
        progress,
        {
            "hold": (COMPENSATED, "hold", "compensated"),
            "reserve": (COMPENSATED, "reserve", "compensated"),
            "charge": (F, "charge", "failed", "card declined"),
            "ship": (P, "ship", "pending"),
        },
    )
    assert len({got[p].status for p in painted.places(saga).values()}) == 3
