"""An accepted cancel ends Cancelled (issue 11, engine contract 1): a request that lands while a node runs, or
between one node's write and the next node's body, is heard before anything else starts, and the store
refuses the Completed ending while a request is outstanding. The races are driven deterministically: a body
blocks on an asyncio event, or a cancel is requested right after a chosen write (a thin wrapper around the
store's real claim handle, in the style of `CountingClaimed`: every write goes to the real store)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from flowdeck.engine import Flow
from flowdeck.engine.context import Context
from flowdeck.engine.flow import Flow as FlowType
from flowdeck.engine.interpreter import AttemptReport, run_attempt
from flowdeck.store import spi
from tests.engine.interp_support import Calls, CountingClaimed, World, world_fixture  # noqa: F401

LOG: list[str] = []


@pytest.fixture(autouse=True)
def _clean_log() -> None:
    LOG.clear()


def release_hold(hold: str) -> None:
    """A module-level undo handler (found again by import path)."""
    LOG.append(f"release {hold}")


class Blocked:
    """A body that says when it entered and waits until released."""

    def __init__(self, name: str, calls: Calls) -> None:
        self.name, self.calls = name, calls
        self.entered, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, ctx: Context) -> str:
        self.calls.hit(self.name)
        ctx.undo(release_hold, self.name)
        self.entered.set()
        await self.release.wait()
        return self.name


class CancelAfter(CountingClaimed):
    """The store's real handle; right after the first accepted write whose events include
    `when(events)`, the test's cancel request is made on the real store (before the engine goes on)."""

    def __init__(
        self,
        inner: spi.Claimed,
        store: spi.FlowStore,
        when: Callable[[Sequence[spi.Event]], bool],
        reason: str = "too late",
    ) -> None:
        super().__init__(inner, Counter())
        self.store, self.when, self.reason = store, when, reason
        self.answer: spi.CancelOutcome | None = None

    async def _after(self, events: Sequence[spi.Event]) -> None:
        if self.answer is None and self.when(events):
            self.answer = await self.store.request_cancel(self.state.execution_id, self.reason, "ops")

    async def append_event(
        self, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        outcome = await super().append_event(event, preceding=preceding)
        await self._after([*preceding, event])
        return outcome

    async def record_progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        preceding: Sequence[spi.Event] = (),
        extra_fields: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        outcome = await super().record_progress(
            path, value, event, preceding=preceding, extra_fields=extra_fields, clear_cancel=clear_cancel
        )
        await self._after([*preceding, event])
        return outcome


def completes(name: str) -> Callable[[Sequence[spi.Event]], bool]:
    def found(events: Sequence[spi.Event]) -> bool:
        return any(e.kind is spi.EventKind.STEP_COMPLETED and e.data.get("step_name") == name for e in events)

    return found


def claimed_now(events: Sequence[spi.Event]) -> bool:
    return any(e.kind is spi.EventKind.EXECUTION_CLAIMED for e in events)


async def started_after_cancel(world: World, eid: str) -> list[str]:
    """The nodes whose StepStarted history records after the CancelRequested event."""
    kinds = [(e.kind, e.data.get("step_name")) for e in (await world.store.get_history(eid)).events]
    at = kinds.index((spi.EventKind.CANCEL_REQUESTED, None))
    return [name for kind, name in kinds[at:] if kind is spi.EventKind.STEP_STARTED]


async def attempt_with(world: World, flow: FlowType, eid: str, wrap: Callable[[spi.Claimed], Any]) -> Any:
    claimed = await world.claim(flow, eid)
    assert claimed is not None
    handle = wrap(claimed.inner)
    report = await run_attempt(flow, handle, store=world.store, clock=world.clock, executor_id="ex-1")
    return report, handle


def three(calls: Calls, kind: str) -> FlowType:
    """a → b → c, each noting an undo; `kind` "output" (valued) or "step" (valueless)."""

    def body(name: str) -> Callable[[Context], Any]:
        def run(ctx: Context) -> str:
            calls.hit(name)
            ctx.undo(release_hold, name)
            return name

        return run

    flow = Flow.init("f")
    for name in ("a", "b", "c"):
        flow = flow.output(name, body(name)) if kind == "output" else flow.step(name, body(name))
    return flow


# ------------------------------------------------------------------------- a cancel during the last node


@pytest.mark.parametrize("kind", ["output", "step"])
async def test_a_cancel_accepted_during_the_last_nodes_body_ends_cancelled_with_its_undos(
    world: World, kind: str
) -> None:
    calls = Calls()
    last = Blocked("last", calls)

    def first(ctx: Context) -> str:
        calls.hit("first")
        ctx.undo(release_hold, "first")
        return "first"

    flow = Flow.init("f")
    if kind == "output":
        flow = flow.output("first", first).output("last", last)
    else:
        flow = flow.step("first", first).step("last", last)
    eid = await world.start(flow)
    attempt = asyncio.ensure_future(world.attempt(flow, eid))
    await last.entered.wait()
    assert await world.store.request_cancel(eid, "customer left", "ops") == spi.Accepted()
    last.release.set()
    report = await attempt
    assert report == AttemptReport(eid, "cancelled", "cancelled")
    assert await world.status(eid) == spi.Cancelled("customer left")
    assert LOG == ["release last", "release first"]  # the last node's undo too, newest first
    assert calls == {"first": 1, "last": 1}
    kinds = await world.kinds(eid)
    assert "Completed" not in kinds
    assert kinds[kinds.index("CancelRequested") :] == [
        "CancelRequested",
        "UndoNoted",  # the last node's record lands (the body did run) ...
        "StepCompleted",
        "CompensationStarted",  # ... the Completed ending is refused, and the unwind runs
        "NodeCompensated",
        "NodeCompensated",
        "CompensationCompleted",
        "ExecutionReleased",
        "Cancelled",
    ]


async def test_the_unwind_after_a_refused_completion_runs_as_compensating_cancellation(world: World) -> None:
    calls = Calls()
    last = Blocked("last", calls)
    flow = Flow.init("f").output("last", last)
    eid = await world.start(flow)
    attempt = asyncio.ensure_future(world.attempt(flow, eid))
    await last.entered.wait()
    assert await world.store.request_cancel(eid, "stop", "ops") == spi.Accepted()
    last.release.set()
    assert (await attempt).outcome == "cancelled"
    started = await world.events(eid, spi.EventKind.COMPENSATION_STARTED)
    assert [e.data["cause"] for e in started] == [spi.cause_to_json(spi.Cancellation("stop"))]
    assert [e.data["reason"] for e in await world.events(eid, spi.EventKind.CANCELLED)] == ["stop"]
    state = await world.state(eid)
    assert (state.status, state.waits, state.executor) == (spi.Cancelled("stop"), {}, None)
    assert (await world.fields(eid))["last"] == "last"  # what the body did stays recorded, and undone
    assert LOG == ["release last"]


# ------------------------------------------------------------- no body starts after a recorded request


@pytest.mark.parametrize("kind", ["output", "step"])
async def test_a_node_whose_start_is_recorded_after_the_request_never_runs_its_body(
    world: World, kind: str
) -> None:
    """The request lands right after the write that records a's completion: whichever node's start is
    recorded after it must not run; what ran is undone."""
    calls = Calls()
    flow = three(calls, kind)
    eid = await world.start(flow)
    report, handle = await attempt_with(
        world, flow, eid, lambda h: CancelAfter(h, world.store, completes("a"))
    )
    assert handle.answer == spi.Accepted()
    assert report.outcome == "cancelled"
    assert await world.status(eid) == spi.Cancelled("too late")
    late = await started_after_cancel(world, eid)
    assert [name for name in late if calls[name]] == []  # no body whose start came after the request
    # b's start rode on the same write as a's completion, before the request: b ran and is undone; c's
    # start is the write that heard the request, so c never ran
    assert calls == {"a": 1, "b": 1}
    assert late == ["c"]
    assert LOG == ["release b", "release a"]


async def test_a_request_between_the_claim_and_the_first_body_stops_the_first_body(world: World) -> None:
    calls = Calls()
    flow = three(calls, "output")
    eid = await world.start(flow)
    claimed = await world.claim(flow, eid)
    assert claimed is not None
    assert claimed.cancel_requested is False
    assert await world.store.request_cancel(eid, "never mind", "ops") == spi.Accepted()
    report = await run_attempt(flow, claimed, store=world.store, clock=world.clock, executor_id="ex-1")
    assert report == AttemptReport(eid, "cancelled", "cancelled")
    assert calls == {}
    assert await world.status(eid) == spi.Cancelled("never mind")


async def test_a_request_landing_as_the_last_node_starts_refuses_the_completion(world: World) -> None:
    """The request lands right after the write that records c's start (c runs: its start came first);
    the ending that follows is refused and c is undone."""
    calls = Calls()
    flow = three(calls, "output")
    eid = await world.start(flow)

    def c_starts(events: Sequence[spi.Event]) -> bool:
        return any(e.kind is spi.EventKind.STEP_STARTED and e.data.get("step_name") == "c" for e in events)

    report, handle = await attempt_with(world, flow, eid, lambda h: CancelAfter(h, world.store, c_starts))
    assert (handle.answer, report.outcome) == (spi.Accepted(), "cancelled")
    assert calls == {"a": 1, "b": 1, "c": 1}
    assert LOG == ["release c", "release b", "release a"]
    assert await started_after_cancel(world, eid) == []
    assert "Completed" not in await world.kinds(eid)


async def test_a_flow_listening_for_cancel_past_its_last_wait_still_ends_cancelled(world: World) -> None:
    """A flow that listens (on_cancel) hears a request at its waits; one that lands after the last wait
    has nowhere to be heard, and the Completed ending is refused all the same."""
    calls = Calls()
    last = Blocked("last", calls)
    flow = (
        Flow.init("f")
        .input("answer", str, on_cancel=lambda ctx, reason: f"withdrawn: {reason}")
        .output("last", last)
    )
    eid = await world.start(flow, answer="yes")
    attempt = asyncio.ensure_future(world.attempt(flow, eid))
    await last.entered.wait()
    assert await world.store.request_cancel(eid, "late", "ops") == spi.Accepted()
    last.release.set()
    assert (await attempt).outcome == "cancelled"
    assert (await world.status(eid), LOG) == (spi.Cancelled("late"), ["release last"])


async def test_a_cancel_after_the_ending_is_answered_already_terminal(world: World) -> None:
    calls = Calls()
    flow = three(calls, "output")
    eid = await world.start(flow)
    assert (await world.attempt(flow, eid)).outcome == "completed"
    assert await world.store.request_cancel(eid, "too late") == spi.AlreadyTerminal(spi.Completed())
    assert (LOG, await world.status(eid)) == ([], spi.Completed())


async def test_the_claim_is_written_with_the_first_start(world: World) -> None:
    """The attempt's first write is its first body's start, and carries its claim events."""
    calls = Calls()
    flow = three(calls, "output")
    eid = await world.start(flow)
    report, _ = await attempt_with(world, flow, eid, lambda h: CancelAfter(h, world.store, claimed_now))
    assert report.outcome == "cancelled"
    # the request landed right after the first write, which recorded a's start: a ran and is undone
    assert (calls, LOG) == ({"a": 1}, ["release a"])


async def test_a_cancel_during_a_foreach_starts_no_further_item(world: World) -> None:
    """Inside a fork too: the next item's start is the write that hears the request; what completed is
    undone, the item still running is cancelled, and nothing else starts."""
    calls = Calls()
    entered = [asyncio.Event(), asyncio.Event()]
    release = [asyncio.Event(), asyncio.Event()]

    async def work(i: int) -> int:
        calls.hit(f"item{i}")
        if i < 2:
            entered[i].set()
            await release[i].wait()
        return i

    flow = Flow.init("f").foreach(
        "w", lambda ctx: [0, 1, 2, 3], work, concurrency=2, compensate=lambda i, v: LOG.append(f"undo {i}")
    )
    eid = await world.start(flow)
    attempt = asyncio.ensure_future(world.attempt(flow, eid))
    await entered[0].wait()
    await entered[1].wait()
    assert await world.store.request_cancel(eid, "enough", "ops") == spi.Accepted()
    release[1].set()
    assert (await attempt).outcome == "cancelled"
    assert (calls, LOG) == ({"item0": 1, "item1": 1}, ["undo 1"])
    assert await world.status(eid) == spi.Cancelled("enough")
    assert await started_after_cancel(world, eid) == ["w~2"]
