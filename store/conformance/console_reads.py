"""Conformance cases for what an operations console reads (Flowdeck additions): the store's clock, the
event feed and its wait, executor heartbeats, and the counts its pages show.

A mixin of `FlowStoreConformance`, so every backend runs them."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any

from flowdeck.store import counts, heartbeats, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import EX1, EX2, SAFETY, SHORT_LEASE, WF1, WF2, StoreFixture, seconds

K = spi.EventKind


def _beat(executor_id: str, **changes: Any) -> heartbeats.Heartbeat:
    beat = heartbeats.Heartbeat(
        executor_id=executor_id,
        host="box",
        pid=41,
        workers_alive=2,
        workers_configured=2,
        claims_held=("x-2", "x-1"),
    )
    return dataclasses.replace(beat, **changes)


async def _claimed_event(fx: StoreFixture, eid: str, executor: str) -> None:
    """Claim `eid` as `executor` and write its ExecutionClaimed event, as a worker does."""
    handle = await fx.claim(eid, executor)
    event = fx.event(K.EXECUTION_CLAIMED, eid, executor_id=executor)
    assert await handle.append_event(event) == spi.WriteOutcome.APPLIED
    await handle.finish(spi.Suspended(frozenset()))


class ConsoleReadCases(StoreCase):
    """The console's reads (Flowdeck): each case names the contract method it holds to its docstring."""

    # ---------------------------------------------------------------------------------------- clock

    async def test_console_now_is_the_stores_clock(self, fx: StoreFixture) -> None:
        assert fx.store.now() == fx.clock.now()
        await fx.clock.advance(7)
        assert fx.store.now() == fx.clock.now()

    # ----------------------------------------------------------------------------------------- feed

    async def test_feed_events_after_an_id_in_append_order(self, fx: StoreFixture) -> None:
        base = await fx.store.latest_event_id()
        await fx.mk_execution("e1")
        await fx.mk_execution("e2", WF2)
        handle = await fx.claim("e1")
        assert await handle.append_event(fx.step_started("e1", "a")) == spi.WriteOutcome.APPLIED

        found = list(await fx.store.events_after(base, with_data=True))
        assert [(e.execution_id, e.workflow_id, e.seq, e.kind) for e in found] == [
            ("e1", WF1, 1, "Created"),
            ("e2", WF2, 1, "Created"),
            ("e1", WF1, 2, "StepStarted"),
        ]
        ids = [e.id for e in found]
        assert ids == sorted(set(ids))
        history = (await fx.store.get_history("e1")).events
        assert [(e.timestamp, dict(e.data)) for e in found if e.execution_id == "e1"] == [
            (h.timestamp, dict(h.data)) for h in history
        ]
        assert ids[0] > base
        assert await fx.store.latest_event_id() == ids[-1]
        assert list(await fx.store.events_after(ids[-1])) == []
        assert list(await fx.store.events_after(ids[0])) == found[1:]

    async def test_feed_scope_and_limit(self, fx: StoreFixture) -> None:
        base = await fx.store.latest_event_id()
        await fx.mk_execution("e1")
        await fx.mk_execution("e2", WF2)
        await fx.mk_execution("e3")
        every = list(await fx.store.events_after(base))
        assert len(every) == 3
        assert list(await fx.store.events_after(base, execution_id="e3")) == [every[2]]
        assert list(await fx.store.events_after(base, workflow_id=WF1)) == [every[0], every[2]]
        # the execution narrows; a workflow given beside it adds nothing
        assert list(await fx.store.events_after(base, execution_id="e2", workflow_id=WF1)) == [every[1]]
        assert list(await fx.store.events_after(base, limit=2)) == every[:2]
        assert list(await fx.store.events_after(base, workflow_id=WF1, limit=1)) == [every[0]]
        assert list(await fx.store.events_after(base, execution_id="nobody")) == []

    async def test_feed_gaps_are_answered_again(self, fx: StoreFixture) -> None:
        base = await fx.store.latest_event_id()
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        first, second, third = await fx.store.events_after(base)
        assert list(await fx.store.events_after(third.id, gaps=[first.id])) == [first]
        assert list(await fx.store.events_after(second.id, gaps=[first.id, 10**12])) == [first, third]
        assert list(await fx.store.events_after(third.id, gaps=[second.id], workflow_id=WF2)) == []

    async def test_feed_event_ids_after_are_the_ids_of_events_after(self, fx: StoreFixture) -> None:
        base = await fx.store.latest_event_id()
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.mk_execution("e4", WF2)
        handle = await fx.claim("e1")
        assert await handle.append_event(fx.step_started("e1", "a")) == spi.WriteOutcome.APPLIED
        every = [e.id for e in await fx.store.events_after(base)]
        assert len(every) == 5
        assert list(await fx.store.event_ids_after(base)) == every
        assert list(await fx.store.event_ids_after(base, limit=2)) == every[:2]
        assert list(await fx.store.event_ids_after(every[-1])) == []
        # gaps are answered again, in id order among the rest; an id nobody took is not
        skipped = await fx.store.event_ids_after(every[2], gaps=[every[0], every[1], 10**12])
        assert list(skipped) == [every[0], every[1], every[3], every[4]]
        assert list(await fx.store.event_ids_after(every[3], gaps=[every[0]], limit=1)) == [every[0]]

    async def test_feed_wait_for_change_ends_at_a_write(self, fx: StoreFixture) -> None:
        waiting = asyncio.ensure_future(fx.store.wait_for_change(seconds(60)))
        await fx.blocked()
        await fx.mk_execution("e1")
        await asyncio.wait_for(waiting, SAFETY)

    async def test_feed_wait_for_change_ends_at_its_timeout(self, fx: StoreFixture) -> None:
        waiting = asyncio.ensure_future(fx.store.wait_for_change(seconds(5)))
        await fx.blocked()
        await fx.clock.advance(4)
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await fx.clock.advance(1)
        await asyncio.wait_for(waiting, SAFETY)

    # ----------------------------------------------------------------------------------- heartbeats

    async def test_heartbeat_upserted_and_listed_while_fresh(self, fx: StoreFixture) -> None:
        t0 = fx.clock.now()
        await fx.store.record_heartbeat(_beat("ex-a"))
        await fx.clock.advance(5)
        failed_at = t0 + seconds(3)
        await fx.store.record_heartbeat(
            _beat(
                "ex-a",
                started=t0 + seconds(4),  # kept from the first beat
                workers_alive=1,
                poll_failures=3,
                last_poll_failure="OperationalError: <gone>",
                last_poll_failure_at=failed_at,
                store_failures=1,
                claims_held=(),
            )
        )
        await fx.store.record_heartbeat(_beat("ex-b", host="other", pid=7, started=t0 - seconds(60)))
        assert list(await fx.store.list_heartbeats(timedelta(minutes=1))) == [
            heartbeats.RecordedHeartbeat(
                executor_id="ex-a",
                host="box",
                pid=41,
                started=t0,
                updated=t0 + seconds(5),
                workers_alive=1,
                workers_configured=2,
                poll_failures=3,
                last_poll_failure="OperationalError: <gone>",
                last_poll_failure_at=failed_at,
                store_failures=1,
                claims_held=(),
            ),
            heartbeats.RecordedHeartbeat(
                executor_id="ex-b",
                host="other",
                pid=7,
                started=t0 - seconds(60),
                updated=t0 + seconds(5),
                workers_alive=2,
                workers_configured=2,
                claims_held=("x-1", "x-2"),
            ),
        ]

    async def test_heartbeat_of_a_silent_executor_drops_out(self, fx: StoreFixture) -> None:
        await fx.store.record_heartbeat(_beat("ex-old"))
        await fx.clock.advance(50)
        await fx.store.record_heartbeat(_beat("ex-new"))
        await fx.clock.advance(10)
        # within is inclusive: ex-old is exactly a minute old
        assert [b.executor_id for b in await fx.store.list_heartbeats(timedelta(minutes=1))] == [
            "ex-new",
            "ex-old",
        ]
        await fx.clock.advance(10)
        assert [b.executor_id for b in await fx.store.list_heartbeats(timedelta(minutes=1))] == ["ex-new"]

    # --------------------------------------------------------------------------------------- counts

    async def test_console_count_by_status(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.terminate("e2", spi.Completed())
        await fx.mk_execution("e3", WF2)
        await fx.mk_execution("e4", WF2, status=spi.Failed("boom", "KeyError"))
        await fx.mk_execution("e5")
        assert list(await fx.store.count_by_status()) == [
            counts.StatusCount(WF1, "completed", 1),
            counts.StatusCount(WF1, "running", 2),
            counts.StatusCount(WF2, "failed", 1),
            counts.StatusCount(WF2, "running", 1),
        ]
        assert list(await fx.store.count_by_status(WF2)) == [
            counts.StatusCount(WF2, "failed", 1),
            counts.StatusCount(WF2, "running", 1),
        ]
        assert list(await fx.store.count_by_status("nobody")) == []

    async def test_console_count_by_version(self, fx: StoreFixture) -> None:
        registered = fx.clock.now()
        await fx.store.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="h1"))
        await fx.store.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="h2"))
        await fx.clock.advance(30)
        await fx.store.put_workflow(spi.WorkflowInfo(id=WF1, structural_hash="h1"))  # first time kept
        await fx.mk_execution("e1", hash="h1")
        await fx.mk_execution("e2", hash="h1", status=spi.Completed())
        await fx.mk_execution("e3", hash="h0", status=spi.Stopped("F0001", "stuck"))
        await fx.mk_execution("e4", WF2, hash="h1")
        assert list(await fx.store.count_by_version(WF1)) == [
            counts.VersionCount("h0", None, 1, 1),
            counts.VersionCount("h1", registered, 1, 2),
            counts.VersionCount("h2", registered, 0, 0),
        ]
        assert list(await fx.store.count_by_version("nobody")) == []

    async def test_console_failure_kinds(self, fx: StoreFixture) -> None:
        assert list(await fx.store.failure_kinds()) == []
        await fx.mk_execution("e1", status=spi.Failed("boom", "KeyError"))
        await fx.mk_execution("e2", WF2, status=spi.Failed("bang", "KeyError"))
        await fx.mk_execution("e3", status=spi.Failed("oops", "AssertionError"))
        await fx.mk_execution("e4", status=spi.Failed("untyped"))
        await fx.mk_execution("e5")
        assert list(await fx.store.failure_kinds()) == ["AssertionError", "KeyError"]

    async def test_console_claims_by_executor(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3", "e4"):
            await fx.mk_execution(eid)
        await fx.claim("e3", EX2)
        await fx.claim("e2", EX1)
        await fx.claim("e1", EX1)
        await fx.claim("e4", EX2, lease=SHORT_LEASE)
        await fx.clock.advance(SHORT_LEASE.total_seconds())  # e4's claim expires now: not live
        assert list(await fx.store.claims_by_executor()) == [
            counts.ExecutorClaims(EX1, ("e1", "e2")),
            counts.ExecutorClaims(EX2, ("e3",)),
        ]

    async def test_console_recent_claimers(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        t0 = fx.clock.now()
        await _claimed_event(fx, "e1", EX1)
        await fx.clock.advance(20)
        await _claimed_event(fx, "e2", EX2)
        await fx.clock.advance(20)
        await _claimed_event(fx, "e3", EX1)
        assert list(await fx.store.recent_claimers(timedelta(minutes=10))) == [
            counts.RecentClaimer(EX1, 2, t0 + seconds(40)),
            counts.RecentClaimer(EX2, 1, t0 + seconds(20)),
        ]
        assert list(await fx.store.recent_claimers(seconds(20))) == [
            counts.RecentClaimer(EX1, 1, t0 + seconds(40)),
            counts.RecentClaimer(EX2, 1, t0 + seconds(20)),
        ]
        assert list(await fx.store.recent_claimers(timedelta(minutes=10), scan=1)) == [
            counts.RecentClaimer(EX1, 1, t0 + seconds(40)),
        ]
