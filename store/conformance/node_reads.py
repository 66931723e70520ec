"""Conformance cases for what a workflow page reads of each node (Flowdeck additions): the executions at
each node now (`nodes_now`) and each node's recent completions, durations and failures (`node_stats`).

A mixin of `FlowStoreConformance`, so every backend runs them. Durations are driven by the manual clock,
which stamps every event a case writes."""

from __future__ import annotations

from flowdeck.store import node_stats, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import WF1, WF2, StoreFixture, seconds

K = spi.EventKind
Count = node_stats.NodeCount
LONG = seconds(3600)  # a lease outliving every clock move of a case


async def _run_steps(fx: StoreFixture, eid: str, steps: list[tuple[str, float]], end: bool = True) -> None:
    """Claim `eid` and run each (path, seconds) step: started, the clock moved, completed; then complete
    the execution (or suspend it, with the last step's completion unwritten, when `end` is False)."""
    handle = await fx.claim(eid, lease=LONG)
    for n, (path, took) in enumerate(steps):
        assert await handle.append_event(fx.step_started(eid, path)) == spi.WriteOutcome.APPLIED
        await fx.clock.advance(took)
        if end or n < len(steps) - 1:
            assert await handle.append_event(fx.step_completed(eid, path)) == spi.WriteOutcome.APPLIED
    if end:
        outcome = await handle.finish(spi.Terminal(spi.Completed(), fx.ending(eid, spi.Completed())))
    else:
        outcome = await handle.finish(spi.Suspended(frozenset()))
    assert outcome == spi.StatusOutcome.APPLIED


async def _fail_at(fx: StoreFixture, eid: str, path: str, kind: str | None) -> None:
    handle = await fx.claim(eid, lease=LONG)
    assert await handle.append_event(fx.step_started(eid, path)) == spi.WriteOutcome.APPLIED
    failed = fx.event(K.STEP_FAILED, eid, step_name=path, error="no", error_kind=kind)
    assert await handle.append_event(failed) == spi.WriteOutcome.APPLIED
    status = spi.Failed("no", kind)
    assert await handle.finish(spi.Terminal(status, fx.ending(eid, status))) == spi.StatusOutcome.APPLIED


class NodeReadCases(StoreCase):
    """A workflow page's per-node reads (Flowdeck): each case names the contract method it holds to."""

    # ----------------------------------------------------------------------------------- nodes_now

    async def test_nodes_now_counts_each_state_at_its_node(self, fx: StoreFixture) -> None:
        for eid in ("run1", "run2", "wait1", "nap1", "stop1", "done1"):
            await fx.mk_execution(eid)
        await fx.mk_execution("other", WF2)
        await _run_steps(fx, "run1", [("a", 1), ("b", 1)], end=False)  # b started, not completed
        await _run_steps(fx, "run2", [("b", 1)], end=False)
        await _run_steps(fx, "done1", [("b", 1)])  # ended: at no node
        await fx.mk_waits("wait1", {"approve": spi.WakeOnField("approve")})
        later = fx.clock.now() + seconds(60)
        await fx.mk_waits("nap1", {"rest": spi.WakeAt(later), "charge#retry2": spi.WakeAt(later)})
        await fx.stop("stop1", spi.Stopped("F0004", "charge", "started and never finished"))
        await _run_steps(fx, "other", [("b", 1)], end=False)

        assert list(await fx.store.nodes_now(WF1)) == [
            Count("approve", "waiting", 1),
            Count("b", "running", 2),
            Count("charge", "sleeping", 1),
            Count("charge", "stopped", 1),
            Count("rest", "sleeping", 1),
        ]
        assert list(await fx.store.nodes_now(WF2)) == [Count("b", "running", 1)]
        assert list(await fx.store.nodes_now("nobody")) == []

    async def test_nodes_now_a_failed_step_is_not_running(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", lease=LONG)
        await handle.append_event(fx.step_started("e1", "a"))
        await handle.append_event(fx.event(K.STEP_FAILED, "e1", step_name="a", error="x", error_kind=None))
        await handle.finish(spi.Suspended(frozenset()))
        assert list(await fx.store.nodes_now(WF1)) == []
        # started again (a retry): running once more
        handle = await fx.claim("e1", lease=LONG)
        await handle.append_event(fx.step_started("e1", "a"))
        await handle.finish(spi.Suspended(frozenset()))
        assert list(await fx.store.nodes_now(WF1)) == [Count("a", "running", 1)]

    async def test_nodes_now_reads_the_newest_scan_unended(self, fx: StoreFixture) -> None:
        for n in range(3):
            await fx.mk_execution(f"e{n}")
            await fx.mk_waits(f"e{n}", {"go": spi.WakeOnField("go")})
            await fx.clock.advance(1)
        assert list(await fx.store.nodes_now(WF1, scan=2)) == [Count("go", "waiting", 2)]
        assert list(await fx.store.nodes_now(WF1, scan=0)) == []

    # ---------------------------------------------------------------------------------- node_stats

    async def test_node_stats_durations_are_nearest_rank_p50_p95(self, fx: StoreFixture) -> None:
        for n, took in enumerate([4, 1, 3, 2, 5]):
            await fx.mk_execution(f"e{n}")
            await _run_steps(fx, f"e{n}", [("a", took), ("b", 10)])
        await fx.mk_execution("e9")
        await _run_steps(fx, "e9", [("a", 100)], end=False)  # started, not completed: not counted

        assert list(await fx.store.node_stats(WF1)) == [
            node_stats.NodeStats("a", 5, seconds(3), seconds(5)),
            node_stats.NodeStats("b", 5, seconds(10), seconds(10)),
        ]
        assert list(await fx.store.node_stats(WF2)) == []

    async def test_node_stats_failures_by_kind_in_executions(self, fx: StoreFixture) -> None:
        for eid, kind in (("f1", "Declined"), ("f2", "Declined"), ("f3", None), ("f4", "Fraud")):
            await fx.mk_execution(eid)
            await _fail_at(fx, eid, "charge", kind)
        assert list(await fx.store.node_stats(WF1)) == [
            node_stats.NodeStats("charge", 0, None, None, (("", 1), ("Declined", 2), ("Fraud", 1)))
        ]

    async def test_node_stats_sleeps_and_inputs_and_retries(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", lease=LONG)
        until = fx.clock.now() + seconds(30)
        await handle.append_event(fx.sleep_started("e1", "rest", until))
        await fx.clock.advance(30)
        await handle.append_event(fx.sleep_completed("e1", "rest"))
        await handle.append_event(fx.input_waiting("e1", "approve"))
        await handle.finish(spi.Suspended(frozenset()))
        await fx.clock.advance(7)
        assert isinstance(await fx.deliver("e1", "approve", "yes"), spi.Delivered)
        # a step failing once and completing on its retry: its first start to its completion
        handle = await fx.claim("e1", lease=LONG)
        await handle.append_event(fx.step_started("e1", "charge"))
        await fx.clock.advance(2)
        await handle.append_event(fx.event(K.STEP_FAILED, "e1", step_name="charge", error="x"))
        await handle.append_event(fx.step_started("e1", "charge"))
        await fx.clock.advance(1)
        await handle.append_event(fx.step_completed("e1", "charge"))
        await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed())))

        assert list(await fx.store.node_stats(WF1)) == [
            node_stats.NodeStats("approve", 1, seconds(7), seconds(7)),
            node_stats.NodeStats("charge", 1, seconds(3), seconds(3), (("", 1),)),
            node_stats.NodeStats("rest", 1, seconds(30), seconds(30)),
        ]

    async def test_node_stats_reads_the_newest_recent_executions(self, fx: StoreFixture) -> None:
        for n, took in enumerate([50, 1, 2]):  # e0, the oldest, took longest
            await fx.mk_execution(f"e{n}")
            await _run_steps(fx, f"e{n}", [("a", took)])
        assert list(await fx.store.node_stats(WF1, recent=2)) == [
            node_stats.NodeStats("a", 2, seconds(1), seconds(2))
        ]
        assert list(await fx.store.node_stats(WF1, recent=0)) == []
